package plots_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"lab/internal/golden"
	"lab/metrics"
	"lab/plots"
)

// fixture returns ten requests of two arms of the scenario "midnight", and one sample of
// another scenario. Midnight falls at request 6: date-in-system-prompt re-reads its whole
// prompt there, spec only the last turn. Request 3 of spec has unknown cached tokens.
func fixture() []metrics.Sample {
	var out []metrics.Sample
	for _, arm := range []string{"date-in-system-prompt", metrics.SpecArm} {
		for i := range int32(10) {
			prompt := int64(2000 + 500*i)
			expected := max(prompt-500, 0)
			if i == 0 {
				expected = 0
			}
			if i == 6 {
				if arm == metrics.SpecArm {
					expected = prompt - 1800
				} else {
					expected = 40
				}
			}
			cached := expected - 20*int64(i%3) // the server keeps a little less than it could
			s := metrics.Sample{
				RunID: "run-1", Scenario: "midnight", Arm: arm, RequestIndex: i,
				Turn: 1 + i/4, Step: 1 + i%4, Kind: metrics.KindStep,
				PromptTokens: prompt, ExpectedCachedTokens: expected,
				CachedTokens: new(max(cached, 0)), CachedSource: metrics.CachedSourceServerLog,
			}
			if arm == metrics.SpecArm && i == 3 {
				s.CachedTokens, s.CachedSource = nil, ""
			}
			out = append(out, s)
		}
	}
	out = append(out, metrics.Sample{Scenario: "other", Arm: "spec", PromptTokens: 10, CachedTokens: new(int64(0))})
	return out
}

func TestCachedShare(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plots.Write(&buf, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{
		"midnight: cached share of the prompt per request",
		"cached share of prompt (%)",
		">spec<", ">date-in-system-prompt<", ">expected<",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Index(svg, ">spec<") > strings.Index(svg, ">date-in-system-prompt<") {
		t.Errorf("legend does not list spec first")
	}
	golden.Check(t, "TestCachedShare.golden.svg", buf.Bytes())
}

func TestCachedSharePNG(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plots.Write(&buf, p, "PNG", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("PNG output starts with %q; want the PNG signature", buf.Bytes()[:min(8, buf.Len())])
	}
	if buf.Len() < 10_000 {
		t.Errorf("PNG output is %d bytes; want a full chart", buf.Len())
	}
}

func TestCachedShareErrors(t *testing.T) {
	t.Parallel()
	if _, err := plots.CachedShare("missing", fixture()); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("CachedShare(missing scenario) = %v; want ErrNoSamples", err)
	}
	if _, err := plots.CachedShare("midnight", nil); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("CachedShare(no samples) = %v; want ErrNoSamples", err)
	}
	// Every cached count unknown: the chart still draws the expected lines.
	s := fixture()
	for i := range s {
		s[i].CachedTokens = nil
	}
	p, err := plots.CachedShare("midnight", s)
	if err != nil {
		t.Fatalf("CachedShare(all unknown) = %v", err)
	}
	if err := plots.Write(&bytes.Buffer{}, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		t.Errorf("Write(all unknown) = %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		format string
		w, h   float64
	}{
		{"unknown format", "gif", 8, 4.5},
		{"zero width", "svg", 0, 4.5},
		{"negative height", "png", 8, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := plots.Write(&bytes.Buffer{}, p, tc.format, vgInch(tc.w), vgInch(tc.h))
			if err == nil {
				t.Errorf("Write(%q, %v×%v) = nil; want error", tc.format, tc.w, tc.h)
			}
			if tc.format == "gif" && !errors.Is(err, plots.ErrUnknownFormat) {
				t.Errorf("Write(gif) = %v; want ErrUnknownFormat", err)
			}
		})
	}
	if err := plots.Write(&bytes.Buffer{}, nil, "svg", plots.DefaultWidth, plots.DefaultHeight); err == nil {
		t.Errorf("Write(nil plot) = nil; want error")
	}
	if err := plots.Write(failWriter{}, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err == nil {
		t.Errorf("Write(failing writer) = nil; want error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func vgInch(v float64) vg.Length { return vg.Length(v) * vg.Inch }
