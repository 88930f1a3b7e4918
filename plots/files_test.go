package plots

import (
	"slices"
	"testing"
)

// TestNamesBase checks the charts' file names: scenario and chart joined, the setup's prefix,
// characters unsafe in a file name replaced, hidden or empty names guarded, and a name given
// twice numbered.
func TestNamesBase(t *testing.T) {
	var n Names
	for _, c := range []struct {
		setup, scenario, chart string // scenario "-" means a chart across scenarios (Across)
		want                   string
	}{
		{"", "midnight", "cached-share", "midnight-cached-share"},
		{"", "-", "reread-vs-spec", "reread-vs-spec"},
		{"a b", "midnight", "prefill", "setup-a_b-midnight-prefill"},
		{"gpu", "-", "reread-vs-spec", "setup-gpu-reread-vs-spec"},
		{"", "team/a b", "prefill", "team_a_b-prefill"},
		{"", "team a/b", "prefill", "team_a_b-prefill-2"},
		{"", "team a//b", "prefill", "team_a_b-prefill-3"},
		{"", "café", "prefill", "caf_-prefill"},
		{"", "", "prefill", "-prefill"},
		{"", "-", ".x", "_.x"},
		{"", "-", "", "_"},
	} {
		var got string
		if c.scenario == "-" {
			got = n.Across(c.setup, c.chart)
		} else {
			got = n.Base(c.setup, c.scenario, c.chart)
		}
		if got != c.want {
			t.Errorf("setup %q, scenario %q, chart %q: base %q, want %q", c.setup, c.scenario, c.chart, got, c.want)
		}
	}
}

// TestFile checks a chart file's path inside a report's folder, in each format a report writes:
// SVG alone by default, SVG then PNG when PNG is asked for.
func TestFile(t *testing.T) {
	for _, c := range []struct {
		png  bool
		want []string
	}{
		{false, []string{"plots/midnight-cached-share.svg"}},
		{true, []string{"plots/midnight-cached-share.svg", "plots/midnight-cached-share.png"}},
	} {
		var got []string
		for _, f := range FileFormats(c.png) {
			got = append(got, File("midnight-cached-share", f))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("png %v: files %q, want %q", c.png, got, c.want)
		}
	}
}
