package metrics

import "testing"

// twice counts each byte read again once per extra read, whatever the reads' order and overlap.
func TestTwice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ranges [][2]int64
		want   int64
	}{
		{nil, 0},
		{[][2]int64{{0, 10}, {10, 20}}, 0},
		{[][2]int64{{10, 20}, {0, 10}, {20, 25}}, 0},
		{[][2]int64{{0, 10}, {5, 15}}, 5},
		{[][2]int64{{0, 100}, {20, 30}, {25, 40}}, 25},
		{[][2]int64{{0, 4}, {0, 4}, {0, 4}}, 8},
	} {
		if got := twice(c.ranges); got != c.want {
			t.Errorf("twice(%v) = %d; want %d", c.ranges, got, c.want)
		}
	}
}
