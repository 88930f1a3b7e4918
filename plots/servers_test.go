package plots_test

import (
	"errors"
	"strings"
	"testing"

	"lab/metrics"
	"lab/plots"
)

// ServerReread draws one line per server for one scenario and arm: the y axis reaches the
// largest re-read of that arm on either server (another arm's larger one is not drawn), and the
// legend names each server; an arm no server has is ErrNoSamples.
func TestServerReread(t *testing.T) {
	t.Parallel()
	mk := func(reread []int64, other int64) *metrics.Rows {
		var s []metrics.Sample
		for i, r := range reread {
			s = append(s, metrics.Sample{Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: int32(i),
				PromptTokens: 5000, CachedTokens: new(5000 - r), RereadTokens: new(r)})
		}
		s = append(s, metrics.Sample{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, PromptTokens: 9000,
			CachedTokens: new(9000 - other), RereadTokens: new(other)})
		return metrics.RowsOf(s)
	}
	lines := []plots.ServerLine{{Name: "A: ollama 0.17.4", Rows: mk([]int64{100, 3000, 50}, 9000)},
		{Name: "B: llamacpp b11669", Rows: mk([]int64{100, 1, 4200}, 9000)}}
	p, err := plots.ServerReread("midnight", metrics.SpecArm, lines)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max != 4200 || p.X.Max != 2 {
		t.Errorf("y max %v, x max %v; want 4200 (server B's request 2) and 2", p.Y.Max, p.X.Max)
	}
	svg := render(t, p, plots.DefaultHeight)
	for _, want := range []string{"midnight, arm spec: re-read tokens per request, per server", "A: ollama 0.17.4", "B: llamacpp b11669"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if _, err := plots.ServerReread("midnight", "no-such-arm", lines); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("an arm no server ran: %v; want ErrNoSamples", err)
	}
}
