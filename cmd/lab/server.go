package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"lab/gguf"
	"lab/localserver"
)

func addModelFlags(c *cobra.Command, m *gguf.ModelOptions) {
	f := c.Flags()
	f.IntVar(&m.HiddenSize, "hidden", m.HiddenSize, "synthetic model: hidden size (embedding_length)")
	f.IntVar(&m.Layers, "layers", m.Layers, "synthetic model: number of layers (block_count)")
	f.IntVar(&m.FeedForward, "ffn", m.FeedForward, "synthetic model: feed-forward size")
	f.Int64Var(&m.Seed, "seed", m.Seed, "synthetic model: seed of the random weights")
	f.BoolVar(&m.F16, "f16", m.F16, "synthetic model: store weight matrices as f16 (smaller file)")
}

func newServerCmd(s *streams) *cobra.Command {
	var cache, llamaBin, llamaModel string
	var generic bool
	var llamaCtx int
	m := gguf.DefaultModelOptions()
	c := &cobra.Command{
		Use:   "server",
		Short: "Start, stop or inspect the local Ollama server lab builds and serves the synthetic model on",
	}
	c.PersistentFlags().StringVar(&cache, "cache", "", "cache folder (default $LAB_CACHE or ~/.cache/lab)")
	start := &cobra.Command{
		Use:   "start",
		Short: "Build (once), start the local server on a free loopback port and register the synthetic model; it keeps running until lab server stop",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if llamaBin != "" || llamaModel != "" {
				return startLlama(cmd, s, dir, llamaBin, llamaModel, llamaCtx)
			}
			if srv, err := localserver.Attach(ctx, sharedServerDir(dir)); err == nil {
				fmt.Fprintf(s.out, "already running: %s (pid %d, log %s)\n", srv.URL, srv.PID, srv.LogPath)
				return nil
			}
			prep, err := localserver.Prepare(ctx, setup(dir, generic, m, localserver.DefaultModelName, s.err))
			if err != nil {
				return err
			}
			srv, err := localserver.Start(ctx, localserver.StartOptions{Binary: prep.Binary, Dir: sharedServerDir(dir), Log: s.err})
			if err != nil {
				return err
			}
			if err := srv.CreateModel(ctx, prep.ModelName, prep.GGUF); err != nil {
				return errors.Join(err, srv.Stop())
			}
			fmt.Fprintf(s.out, "%s\nollama %s, pid %d, model %s, log %s\n", srv.URL, srv.Version, srv.PID, prep.ModelName, srv.LogPath)
			return nil
		},
	}
	start.Flags().BoolVar(&generic, "generic-build", false, "build Ollama without -march=native")
	start.Flags().StringVar(&llamaBin, "llamacpp", "", "start your own llama-server binary instead of Ollama, serving --gguf (use it with lab run --backend llamacpp --base-url URL)")
	start.Flags().StringVar(&llamaModel, "gguf", "", "with --llamacpp: the GGUF model file to serve")
	start.Flags().IntVar(&llamaCtx, "num-ctx", gguf.DefaultContextLength, "with --llamacpp: the context length in tokens (llama-server -c)")
	aliasFlag(start.Flags(), "ctx-size", "num-ctx")
	addModelFlags(start, &m)
	// attached runs f on the server `lab server start` left running, or says it is not running.
	attached := func(f func(*localserver.Server) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			srv, err := localserver.Attach(cmd.Context(), sharedServerDir(dir))
			if errors.Is(err, localserver.ErrNotRunning) {
				fmt.Fprintln(s.out, "not running")
				return nil
			}
			if err != nil {
				return err
			}
			return f(srv)
		}
	}
	// andLlama runs f, then g on the llama-server `lab server start --llamacpp` left running, if
	// there is one.
	andLlama := func(f func(*cobra.Command, []string) error, g func(*localserver.LlamaServer) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if err := f(cmd, args); err != nil {
				return err
			}
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			ls, err := localserver.AttachLlamaServer(cmd.Context(), sharedLlamaDir(dir))
			if errors.Is(err, localserver.ErrNotRunning) {
				return nil
			}
			if err != nil {
				return err
			}
			return g(ls)
		}
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the server lab server start started (and its llama-server, if one was started)",
		Args:  cobra.NoArgs,
		RunE: andLlama(attached(func(srv *localserver.Server) error {
			if err := srv.Stop(); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "stopped %s (pid %d)\n", srv.URL, srv.PID)
			return nil
		}), func(ls *localserver.LlamaServer) error {
			if err := ls.Stop(); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "stopped llama-server %s (pid %d)\n", ls.URL, ls.PID)
			return nil
		}),
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the local server is running, and where",
		Args:  cobra.NoArgs,
		RunE: andLlama(attached(func(srv *localserver.Server) error {
			fmt.Fprintf(s.out, "running: %s\nollama %s, pid %d, log %s\n", srv.URL, srv.Version, srv.PID, srv.LogPath)
			return nil
		}), func(ls *localserver.LlamaServer) error {
			fmt.Fprintf(s.out, "llama-server running: %s\nbuild %s, pid %d, model %s, log %s\n", ls.URL, ls.BuildInfo, ls.PID, ls.ModelPath, ls.LogPath)
			return nil
		}),
	}
	prepare := &cobra.Command{
		Use:   "prepare",
		Short: "Build (or reuse) the Ollama binary, fetch the tokenizer and write the synthetic model, without starting anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			prep, err := localserver.Prepare(cmd.Context(), setup(dir, generic, m, localserver.DefaultModelName, s.err))
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "ollama    %s\nmodel     %s\ntokenizer %s\n", prep.Binary, prep.GGUF, prep.TokenizerDir)
			return nil
		},
	}
	prepare.Flags().BoolVar(&generic, "generic-build", false, "build Ollama without -march=native")
	addModelFlags(prepare, &m)
	c.AddCommand(prepare, start, stop, status)
	return c
}

func newModelCmd(s *streams) *cobra.Command {
	c := &cobra.Command{Use: "model", Short: "Write the synthetic model"}
	var out, cache string
	m := gguf.DefaultModelOptions()
	synth := &cobra.Command{
		Use:   "synth",
		Short: "Write a GGUF with architecture qwen3, random weights from a fixed seed and the real Qwen3 tokenizer and chat template",
		Example: `  lab model synth --out /tmp/qwen3-synth.gguf
  lab model synth --hidden 256 --layers 4 --out big.gguf   # slower prefill, closer to a real model`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput("--out is required")
			}
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			tokDir, err := localserver.FetchTokenizer(cmd.Context(), dir, s.err)
			if err != nil {
				return err
			}
			if err := gguf.WriteModel(out, tokDir, m); err != nil {
				return err
			}
			fmt.Fprintln(s.out, out)
			return nil
		},
	}
	synth.Flags().StringVar(&out, "out", "", "the GGUF file to write")
	synth.Flags().StringVar(&cache, "cache", "", "cache folder for the tokenizer (default $LAB_CACHE or ~/.cache/lab)")
	addModelFlags(synth, &m)
	c.AddCommand(synth)
	return c
}

// sharedLlamaDir is where `lab server start --llamacpp` keeps the llama-server it leaves running.
func sharedLlamaDir(cache string) string { return filepath.Join(cache, "llama-server") }

// startLlama starts the user's llama-server binary serving model and leaves it running.
func startLlama(cmd *cobra.Command, s *streams, cache, bin, model string, ctxSize int) error {
	switch {
	case bin == "":
		return badInput("--gguf without --llamacpp: the synthetic model is served by Ollama; name a llama-server binary with --llamacpp")
	case model == "":
		return badInput("--llamacpp needs --gguf: the model file to serve")
	}
	for _, f := range []struct{ flag, path string }{{"--llamacpp", bin}, {"--gguf", model}} {
		if _, err := os.Stat(f.path); err != nil {
			return badInput("%s: %v", f.flag, err)
		}
	}
	ctx := cmd.Context()
	if ls, err := localserver.AttachLlamaServer(ctx, sharedLlamaDir(cache)); err == nil {
		fmt.Fprintf(s.out, "already running: llama-server %s (pid %d, log %s)\n", ls.URL, ls.PID, ls.LogPath)
		return nil
	}
	ls, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{
		Binary: bin, Model: model, Dir: sharedLlamaDir(cache), CtxSize: ctxSize, Log: s.err,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "%s\nllama-server %s, pid %d, model %s, log %s\n", ls.URL, ls.BuildInfo, ls.PID, ls.ModelPath, ls.LogPath)
	return nil
}
