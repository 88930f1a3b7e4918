package plots

import (
	"fmt"
	"path"
	"strings"
	"unicode"
)

// Dir is the folder of a report's charts inside the report's folder (the run folder, or lab
// report --out): results/run_id=<run-id>/plots/.
const Dir = "plots"

// FileFormats returns the formats a report writes every chart in, in the order it writes them:
// "svg" (also inlined in report.html and linked from report.md), then "png" only when png is
// true (lab run and lab report --png): rasterizing and encoding a PNG costs several times an
// SVG's CPU and no report embeds one. The slice is new on every call.
func FileFormats(png bool) []string {
	if png {
		return []string{"svg", "png"}
	}
	return []string{"svg"}
}

// File returns the path of one chart file relative to the report's folder, slash-separated:
// Dir/<base>.<format>, for example "plots/midnight-cached-share.svg"; base comes from
// [Names.Base].
func File(base, format string) string { return path.Join(Dir, base+"."+format) }

// Names gives the charts of one report their file base names, each name once. The zero value is
// ready to use; a Names is not safe for concurrent use.
type Names struct {
	used map[string]bool
}

// Base returns the file base name (no folder, no extension) of chart (a [Chart]'s Name) of
// scenario: "<scenario>-<chart>", for example "midnight-cached-share". With setup (the label of
// one setup of runs of several) the name starts "setup-<setup>-": a chart never draws two setups
// as one, so each setup's charts are files of their own.
//
// The name is safe as one file name on every system: each run of characters other than ASCII
// letters, digits, "-", "_" and "." becomes one "_" ("team/a b" → "team_a_b"), and a name that
// would be empty or hidden gets a leading "_". A name this Names already gave (two scenarios
// whose names differ only in replaced characters) gets "-2", "-3", … appended.
func (n *Names) Base(setup, scenario, chart string) string {
	return n.unique(setup, scenario+"-"+chart)
}

// Across is [Names.Base] for a chart across scenarios, named chart alone (for example
// "reread-vs-spec", the chart of [RelativeBars]), with the same setup prefix and rules.
func (n *Names) Across(setup, chart string) string { return n.unique(setup, chart) }

// unique returns name with setup's prefix, made safe, once.
func (n *Names) unique(setup, name string) string {
	if setup != "" {
		name = "setup-" + setup + "-" + name
	}
	name = safeFileName(name)
	if n.used == nil {
		n.used = map[string]bool{}
	}
	b := name
	for i := 2; n.used[b]; i++ {
		b = fmt.Sprintf("%s-%d", name, i)
	}
	n.used[b] = true
	return b
}

// safeFileName makes name safe as one file name on every system (see [Names.Base]).
func safeFileName(name string) string {
	var b strings.Builder
	under := false
	for _, r := range name {
		ok := r < 0x80 && (r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r))
		if !ok {
			if !under {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		b.WriteRune(r)
		under = false
	}
	s := b.String()
	if s == "" || strings.HasPrefix(s, ".") {
		s = "_" + s
	}
	return s
}
