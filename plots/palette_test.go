package plots

import (
	"slices"
	"testing"
)

// Up to len(palette) (20) arms differ by colour; beyond, an arm that shares a colour differs
// in line pattern and point shape.
func TestArmStylesDiffer(t *testing.T) {
	t.Parallel()
	if len(palette) < 20 {
		t.Fatalf("palette has %d colours; want at least 20", len(palette))
	}
	for i := range len(palette) {
		li, _ := armStyle(i)
		for j := range i {
			if lj, _ := armStyle(j); lj.Color == li.Color {
				t.Errorf("arms %d and %d share colour %v", j, i, li.Color)
			}
		}
	}
	for i := range 3 * len(palette) {
		li, gi := armStyle(i)
		for j := range i {
			lj, gj := armStyle(j)
			if li.Color == lj.Color && slices.Equal(li.Dashes, lj.Dashes) && gi.Shape == gj.Shape {
				t.Errorf("arms %d and %d have the same colour, line and shape", j, i)
			}
		}
	}
}
