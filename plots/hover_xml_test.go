package plots

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"sync"
	"testing"

	"lab/metrics"
)

// hoverChart is a cached-share chart of arm with one divergence ring, its segment and
// excerpt as given.
func hoverChart(t *testing.T, arm, segment, excerpt string) []metrics.Sample {
	t.Helper()
	var samples []metrics.Sample
	for i, cached := range []int64{0, 990, 10} {
		s := metrics.Sample{Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: int32(i), Turn: 1, Step: int32(i + 1),
			PromptTokens: 1000 + 100*int64(i), CachedTokens: new(cached), ExpectedCachedTokens: new(cached), RereadTokens: new(1000 + 100*int64(i) - cached)}
		if i == 2 {
			s.DivergenceToken, s.DivergenceSegment, s.DivergenceExcerpt = new(int64(10)), segment, excerpt
		}
		samples = append(samples, s)
	}
	return samples
}

// wellFormed fails t unless doc parses as XML to its end.
func wellFormed(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
}

// A hover text whose excerpt holds characters XML must escape or cannot hold (quotes, <, &,
// control characters, invalid UTF-8, a lone surrogate) leaves the SVG well-formed: the excerpt's
// strings are quoted in Go syntax, then escaped. (Arm and segment names are the lab's own,
// drawn as the chart's labels too.)
func TestCachedShareHoverWellFormed(t *testing.T) {
	t.Parallel()
	p, err := CachedShare("s", hoverChart(t, "arm-1", "tool result 3", `{"before":"a\u0001\u0007 <&>\"\u0000","cached":"\u00ff\ud800","prompt":"x","cached_cut":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := Write(&svg, p, "svg", DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), `shared: &#34;a\x01\a &lt;&amp;&gt;\&#34;\x00&#34;`) {
		t.Errorf("no escaped excerpt in the hover text:\n%s", svg.String()[max(0, strings.Index(svg.String(), `<g class="hover">`)):])
	}
	wellFormed(t, svg.Bytes())
}

// One chart written by several goroutines at once, in SVG and PNG: each SVG has the ring's one
// hover circle.
func TestCachedShareHoverConcurrent(t *testing.T) {
	t.Parallel()
	p, err := CachedShare("s", hoverChart(t, "a", "system", ""))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			format := []string{"svg", "png"}[i%2]
			var b bytes.Buffer
			if err := Write(&b, p, format, DefaultWidth, DefaultHeight); err != nil {
				t.Error(err)
				return
			}
			if n := bytes.Count(b.Bytes(), []byte("<circle ")); format == "svg" && n != 1 {
				t.Errorf("an SVG written at once with others has %d hover circles, want 1", n)
			}
		})
	}
	wg.Wait()
}
