package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"lab/backend/ollama"
	"lab/cachesim"
	"lab/calibrate"
	"lab/gguf"
	"lab/localserver"
)

// calibrateOptions are `lab calibrate`'s flags.
type calibrateOptions struct {
	// Sizes are the prompt lengths to measure, in tokens (--sizes).
	Sizes []int
	// Out is the JSON file to write (--out).
	Out string
	// CacheDir is the cache folder (tokenizer, server build); "" for the default (--cache).
	CacheDir string
}

func newCalibrateCmd(s *streams) *cobra.Command {
	o := &calibrateOptions{}
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
			return runCalibrate(cmd.Context(), s, o)
		},
	}
	c.Flags().IntSliceVar(&o.Sizes, "sizes", []int{1000, 2000, 4000, 8000, 16000}, "prompt lengths to measure, in tokens (about: the server's count is recorded)")
	c.Flags().StringVar(&o.Out, "out", "", "the JSON file to write")
	c.Flags().StringVar(&o.CacheDir, "cache", "", "cache folder (default $LAB_CACHE or ~/.cache/lab)")
	return c
}

// runCalibrate is `lab calibrate`: the local server (the one `lab server start` left running, or
// one of its own, serving the synthetic model with its default options), measured by
// [calibrate.Run], the calibration written to o.Out.
func runCalibrate(ctx context.Context, s *streams, o *calibrateOptions) error {
	if o.Out == "" {
		return badInput("--out is required")
	}
	if len(o.Sizes) < 2 {
		return badInput("--sizes: want at least two prompt lengths")
	}
	cache, err := cacheDir(s, o.CacheDir)
	if err != nil {
		return err
	}
	name := localserver.DefaultModelName
	qwen3, err := localserver.OllamaChatOf(gguf.Qwen3)
	if err != nil {
		return err
	}
	srv, _, stop, err := localServer(ctx, cache, false, gguf.DefaultModelOptions(), name, name, qwen3, s.err)
	if err != nil {
		return err
	}
	defer stop()
	client, err := ollama.New(srv.URL, name, ollama.WithNumCtx(gguf.DefaultContextLength), ollama.WithServerLog(srv.LogPath))
	if err != nil {
		return err
	}
	cal, err := calibrate.Run(ctx, client, calibrate.Options{Sizes: o.Sizes, Server: "ollama " + srv.Version, Model: name, Log: s.err})
	if err != nil {
		return err
	}
	if err := cal.Write(o.Out); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "%s: prefill ≈ %.0f ns × n + %.3f ns × n²\n", o.Out, cal.Prefill.Linear, cal.Prefill.Quadratic)
	return nil
}

// readCalibration reads a file `lab calibrate` wrote ([calibrate.Read]); an error is bad input
// naming --calibration.
func readCalibration(path string) (*cachesim.PrefillModel, error) {
	c, err := calibrate.Read(path)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--calibration: %w", err)}
	}
	return &c.Prefill, nil
}
