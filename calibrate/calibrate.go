// Package calibrate measures a model server's prefill time by prompt length for the sim
// backend: `lab calibrate` sends cold prompts of several lengths, fits prefill time = a·n + b·n²
// ([cachesim.FitPrefill]) and writes a [Calibration] file, which `lab run --backend sim
// --calibration FILE` reads to charge each request the prefill time that server would have
// taken for the tokens it did not reuse.
package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"lab/cachesim"
)

// Calibration is the file `lab calibrate` writes and `lab run --backend sim --calibration`
// reads (JSON): the server and model measured, the points, the fit and when it was taken.
type Calibration struct {
	// Server names the server measured and its version, such as "ollama 0.17.4".
	Server string `json:"server"`
	// Model is the model name on the server.
	Model string `json:"model"`
	// Points are the cold prefills measured: the server's prompt token count and its prefill time.
	Points []cachesim.PrefillPoint `json:"points"`
	// Prefill is the fit of Points ([cachesim.FitPrefill]).
	Prefill cachesim.PrefillModel `json:"prefill"`
	// Taken is when the points were measured (UTC).
	Taken time.Time `json:"taken_at"`
}

// Prefiller is a server that prefills a raw prompt cold and says how long it took: Ollama's
// client ([ollama.Client.Prefill]: prompt_eval_count and prompt_eval_duration of /api/generate,
// its cache emptied first).
type Prefiller interface {
	Prefill(ctx context.Context, text string) (tokens int, prefill time.Duration, err error)
}

// Options are what [Run] measures.
type Options struct {
	// Sizes are the prompt lengths to send, in tokens (about: the server's count is recorded);
	// at least two.
	Sizes []int
	// Server and Model are recorded in the calibration as they are.
	Server, Model string
	// Log, when set, receives one line per point measured.
	Log io.Writer
	// Now is the clock for [Calibration].Taken; nil means time.Now.
	Now func() time.Time
}

// Run sends p one cold prompt of about each of o.Sizes tokens, in order (pseudo-words from a
// fixed seed: the same texts in every calibration), and returns the points and their fit. It
// returns an error for fewer than two sizes, a failed prefill (naming its size) or points that
// do not fit (fewer than two distinct token counts).
func Run(ctx context.Context, p Prefiller, o Options) (*Calibration, error) {
	if len(o.Sizes) < 2 {
		return nil, errors.New("want at least two prompt lengths")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	cal := &Calibration{Server: o.Server, Model: o.Model, Taken: now().UTC()}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range o.Sizes {
		tokens, prefill, err := p.Prefill(ctx, words(rng, n))
		if err != nil {
			return nil, fmt.Errorf("prefill of about %d tokens: %w", n, err)
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%6d tokens: prefill %s\n", tokens, prefill.Round(time.Millisecond))
		}
		cal.Points = append(cal.Points, cachesim.PrefillPoint{Tokens: tokens, Prefill: prefill})
	}
	var err error
	if cal.Prefill, err = cachesim.FitPrefill(cal.Points); err != nil {
		return nil, err
	}
	return cal, nil
}

// words returns a text of about n tokens: lowercase pseudo-words of 3-8 letters, one token or two
// each with the space before them.
func words(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n / 2 {
		b.WriteByte(' ')
		for range 3 + rng.IntN(6) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	return b.String()
}

// Write writes c to path as indented JSON.
func (c *Calibration) Write(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Read reads a calibration file. Its errors name the file: one that does not read, is not a
// calibration's JSON, or holds fewer than two points.
func Read(path string) (*Calibration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.Points) < 2 {
		return nil, fmt.Errorf("%s: fewer than two points", path)
	}
	return &c, nil
}
