package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lab/backend/ollama"
	"lab/cachesim"
	"lab/gguf"
	"lab/localserver"
)

// Calibration is what `lab calibrate` writes and `lab run --backend sim --calibration` reads.
type Calibration struct {
	Server  string                  `json:"server"`
	Model   string                  `json:"model"`
	Points  []cachesim.PrefillPoint `json:"points"`
	Prefill cachesim.PrefillModel   `json:"prefill"`
	Taken   time.Time               `json:"taken_at"`
}

func newCalibrateCmd(s *streams) *cobra.Command {
	o := &runOptions{Model: gguf.DefaultModelOptions(), ModelName: localserver.DefaultModelName, NumCtx: gguf.DefaultContextLength}
	var sizes []int
	var out string
	c := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure the local server's prefill time by prompt length, for the sim backend",
		Long: `calibrate sends cold prompts of several lengths to the local Ollama server (built and started as
lab run does), fits prefill time = a·n + b·n² and writes the fit and the points as JSON. lab run
--backend sim --calibration FILE then charges each request the prefill time this server would
have taken for the tokens it did not reuse.`,
		Example: "  lab calibrate --out calibration.json\n  lab run --backend sim --scenario all --arm all --calibration calibration.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput("--out is required")
			}
			if len(sizes) < 2 {
				return badInput("--sizes: want at least two prompt lengths")
			}
			ctx := cmd.Context()
			cache, err := cacheDir(s, o.CacheDir)
			if err != nil {
				return err
			}
			srv, _, stop, err := localServer(ctx, cache, o, s.err)
			if err != nil {
				return err
			}
			defer stop()
			client, err := ollama.New(srv.URL, o.ModelName, ollama.WithNumCtx(o.NumCtx), ollama.WithServerLog(srv.LogPath))
			if err != nil {
				return err
			}
			cal := Calibration{Server: "ollama " + srv.Version, Model: o.ModelName, Taken: time.Now().UTC()}
			rng := rand.New(rand.NewPCG(1, 2))
			for _, n := range sizes {
				tokens, prefill, err := client.Prefill(ctx, words(rng, n))
				if err != nil {
					return err
				}
				fmt.Fprintf(s.err, "%6d tokens: prefill %s\n", tokens, prefill.Round(time.Millisecond))
				cal.Points = append(cal.Points, cachesim.PrefillPoint{Tokens: tokens, Prefill: prefill})
			}
			if cal.Prefill, err = cachesim.FitPrefill(cal.Points); err != nil {
				return err
			}
			b, _ := json.MarshalIndent(cal, "", "  ")
			if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s: prefill ≈ %.0f ns × n + %.3f ns × n²\n", out, cal.Prefill.Linear, cal.Prefill.Quadratic)
			return nil
		},
	}
	c.Flags().IntSliceVar(&sizes, "sizes", []int{1000, 2000, 4000, 8000, 16000}, "prompt lengths to measure, in tokens (about: the server's count is recorded)")
	c.Flags().StringVar(&out, "out", "", "the JSON file to write")
	c.Flags().StringVar(&o.CacheDir, "cache", "", "cache folder (default $LAB_CACHE or ~/.cache/lab)")
	return c
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

// readCalibration reads a file `lab calibrate` wrote.
func readCalibration(path string) (*cachesim.PrefillModel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--calibration: %w", err)}
	}
	var c Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &usageError{fmt.Errorf("--calibration %s: %w", path, err)}
	}
	if len(c.Points) < 2 {
		return nil, &usageError{fmt.Errorf("--calibration %s: fewer than two points", path)}
	}
	return &c.Prefill, nil
}
