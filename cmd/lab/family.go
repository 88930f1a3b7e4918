package main

import (
	"lab/gguf"
	"lab/localserver"
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
)

// checkFamily checks --family of lab run and, for a family other than Qwen3, makes the options
// serve its synthetic model: the model name lab-<family>-synth unless --model is given, the
// family's default depth unless --layers is, and on Ollama the family's stand-in architecture
// (localserver.OllamaChat.StandIn: DeepSeek V3 on llama). Another family is for the lab's own
// servers only (--backend ollama without --server, --backend llamacpp without --base-url,
// --llamacpp and --gguf): anything else is bad input naming the flag, as are gpt-oss on Ollama
// (no chat template: localserver.OllamaChatOf) and Llama 3.1 on Ollama v0.17.4
// (OllamaChat.NoSessions: no tools in its detected template), and gemma3 and gpt-oss on
// llama-server (localserver.LlamaNoSessions).
func checkFamily(o *runOptions, changed func(string) bool) error {
	fam, err := gguf.ParseFamily(o.Family)
	if err != nil {
		return badInput("--family: %v", err)
	}
	if fam == gguf.Qwen3 {
		return nil
	}
	switch {
	case o.Backend != "ollama" && o.Backend != "llamacpp":
		return badInput("--family %s is for --backend ollama or llamacpp (the lab's own servers); --backend %s renders or serves Qwen3's format only", fam, o.Backend)
	case o.Backend == "ollama" && o.ServerURL != "":
		return badInput("--family %s serves the lab's synthetic model on its own Ollama; with --server, --model names the server's model", fam)
	case o.Backend == "llamacpp" && (o.Remote.BaseURL != "" || o.Remote.LlamaServer != "" || o.GGUF != ""):
		return badInput("--family %s serves the lab's synthetic model on its own llama-server; --base-url, --llamacpp and --gguf serve your own", fam)
	}
	o.Model.Family = fam
	if o.Backend == "ollama" {
		format, err := localserver.OllamaChatOf(fam)
		if err != nil {
			return badInput("--family: %v", err)
		}
		if format.NoSessions != "" {
			return badInput("--family %s on Ollama (%s): %s; run it with --backend llamacpp, whose --jinja renders the GGUF's own template", fam, format.Template, format.NoSessions)
		}
		o.Model = format.ModelOptions(o.Model)
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

// otherFamily reports whether f is another family than Qwen3 (the lab's reference model).
func otherFamily(f gguf.Family) bool { return f.OrQwen3() != gguf.Qwen3 }
