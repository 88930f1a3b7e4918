package calibrate

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeServer prefills in a·n + b·n² nanoseconds, n its count of the text's tokens (one per
// pseudo-word, as Qwen3 counts most of them).
type fakeServer struct {
	a, b  float64
	texts []string
	fail  int // the call that fails, from 1; 0 for none
}

func (f *fakeServer) Prefill(_ context.Context, text string) (int, time.Duration, error) {
	f.texts = append(f.texts, text)
	if len(f.texts) == f.fail {
		return 0, 0, errors.New("server gone")
	}
	n := len(strings.Fields(text))
	return n, time.Duration(f.a*float64(n) + f.b*float64(n)*float64(n)), nil
}

// Run sends one prompt per size, records the server's counts, and fits the server's own
// coefficients back; the texts are the same from one calibration to the next; the file it
// writes reads back.
func TestRunFitsTheServersPrefill(t *testing.T) {
	srv := &fakeServer{a: 2000, b: 0.25}
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	cal, err := Run(context.Background(), srv, Options{Sizes: []int{1000, 4000, 16000}, Server: "ollama x", Model: "m", Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Points) != 3 || cal.Points[0].Tokens != 500 || cal.Points[2].Tokens != 8000 {
		t.Errorf("points %+v; want the server's counts of the 3 prompts (500, 2000, 8000 words)", cal.Points)
	}
	if math.Abs(cal.Prefill.Linear-2000) > 1e-3 || math.Abs(cal.Prefill.Quadratic-0.25) > 1e-6 {
		t.Errorf("fit %+v; want 2000 ns/token and 0.25 ns/token²", cal.Prefill)
	}
	if cal.Server != "ollama x" || cal.Model != "m" || !cal.Taken.Equal(at) {
		t.Errorf("calibration %+v", cal)
	}
	again := &fakeServer{a: 1, b: 1}
	if _, err := Run(context.Background(), again, Options{Sizes: []int{1000, 4000, 16000}}); err != nil || again.texts[1] != srv.texts[1] {
		t.Errorf("a second calibration sent other texts (%v)", err)
	}
	path := filepath.Join(t.TempDir(), "cal.json")
	if err := cal.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil || back.Prefill != cal.Prefill || len(back.Points) != 3 {
		t.Errorf("Read = %+v, %v; want what was written", back, err)
	}
}

// Fewer than two sizes, or a prefill that fails, is an error naming it; nothing is fitted.
func TestRunErrors(t *testing.T) {
	if _, err := Run(context.Background(), &fakeServer{}, Options{Sizes: []int{1000}}); err == nil {
		t.Error("one size: no error")
	}
	_, err := Run(context.Background(), &fakeServer{a: 1, fail: 2}, Options{Sizes: []int{1000, 2000}})
	if err == nil || !strings.Contains(err.Error(), "about 2000 tokens: server gone") {
		t.Errorf("a failed prefill: %v; want it named with its size", err)
	}
}
