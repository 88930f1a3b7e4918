package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// The HTML report opens with its contents and its answer: every section is a <details> open by
// default whose heading the contents link to, the table of every figure is folded behind the
// narrow headline of each scenario, and with several scenarios the glance is an arms × scenarios
// table of re-read relative to spec.
func TestHTMLLayout(t *testing.T) {
	t.Parallel()
	samples := repsFixture()
	other := repsFixture()
	for i := range other {
		other[i].Scenario = "zz-other"
		if other[i].Arm == report.CliffArm {
			*other[i].RereadTokens *= 3 // another ratio to spec in the second scenario
			*other[i].CachedTokens = other[i].PromptTokens - *other[i].RereadTokens
			*other[i].ExpectedCachedTokens = *other[i].CachedTokens
		}
	}
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: report.Analyze(append(samples, other...))}
	var b bytes.Buffer
	if err := report.HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if o, c := strings.Count(page, "<details"), strings.Count(page, "</details>"); o != c || o == 0 {
		t.Fatalf("%d <details> opened, %d closed", o, c)
	}
	// Each section's heading has an id the contents link to, in order.
	ids := regexp.MustCompile(`<summary><h[23] id="([^"]+)">([^<]+)</h[23]></summary>`).FindAllStringSubmatch(page, -1)
	links := regexp.MustCompile(`<li><a href="#([^"]+)">([^<]+)</a>`).FindAllStringSubmatch(page, -1)
	if len(ids) < 4 || len(ids) != len(links) {
		t.Fatalf("%d sections, %d links in the contents", len(ids), len(links))
	}
	for i := range ids {
		if ids[i][1] != links[i][1] || ids[i][2] != links[i][2] {
			t.Errorf("section %d is %q (%s), its link %q (%s)", i, ids[i][2], ids[i][1], links[i][2], links[i][1])
		}
	}
	if ids[0][2] != "At a glance" || ids[1][2] != "What was run" {
		t.Errorf("first sections %q, %q; want At a glance, then What was run", ids[0][2], ids[1][2])
	}
	// The answer first, then the contents, then everything else.
	if toc := strings.Index(page, `<nav class="toc">`); !(strings.Index(page, ids[0][0]) < toc && toc < strings.Index(page, ids[1][0])) {
		t.Error("the contents do not come between the answer and the second section")
	}
	if strings.Index(page, "Lab version:") < strings.Index(page, ids[1][0]) {
		t.Error("the runs' facts come before the answer")
	}
	glance := page[strings.Index(page, ids[0][0]):strings.Index(page, ids[1][0])]
	if !strings.Contains(glance, `<table class="matrix">`) {
		t.Errorf("glance of two scenarios has no matrix table:\n%s", glance)
	}
	// The cliff arm's row: 1.88× in midnight (as in the single-scenario golden) and a larger
	// ratio in the other scenario, where its re-read tokens were tripled.
	row := regexp.MustCompile(`<tr><td>` + report.CliffArm + `</td><td class="n">([0-9.]+)×</td><td class="n">([0-9.]+)×</td></tr>`).FindStringSubmatch(glance)
	if row == nil || row[1] != "1.88" || row[2] <= row[1] {
		t.Errorf("cliff arm's glance row %q, want 1.88× then more", row)
	}
	if n := strings.Count(page, `<details class="fold"><summary>Every figure of `); n != 2 {
		t.Errorf("%d folded tables of every figure, want one per scenario (2)", n)
	}
}
