package localserver

import (
	"fmt"
	"path/filepath"
	"strings"

	"lab/gguf"
)

// OllamaChat is how the lab registers a family's synthetic model with Ollama: the Modelfile's
// RENDERER and PARSER (both "" for a model rendered with the Go template Ollama detects from the
// GGUF's tokenizer.chat_template, server/model.go detectChatTemplate in v0.17.4), and what the
// prompt is rendered with, in words, for the manifest's chat_template setting.
type OllamaChat struct {
	// Renderer and Parser are Ollama built-in names ("qwen3.5", "deepseek3.1"), or "".
	Renderer, Parser string
	// Template says what renders the prompt: the built-in renderer, the detected Go template
	// (a stand-in for the family's own Jinja template where it is not the same format), or the
	// lab's own Go template.
	Template string
	// GoTemplate, when not "", is the Modelfile's TEMPLATE the lab registers the model with
	// (a Go template written for the lab: [Llama32OllamaTemplate]); "" lets Ollama detect one.
	GoTemplate string
	// ReplyEnd, when not "", is the token that ends a reply in GoTemplate's rendering
	// (<|eot_id|>): the lab then takes the text of a reply from the server's own rendering of
	// it and counts the expected cached tokens with the family's tokenizer (the model runs in
	// Ollama's llama.cpp runner, which tokenizes as llama.cpp does).
	ReplyEnd string
	// NoSessions, when not "", says why the lab's sessions cannot be measured on the model in
	// Ollama v0.17.4 (it can still be registered and served): a detected Go template without
	// tools (Ollama refuses every request that offers tools, HTTP 400 "does not support
	// tools"), or a tokenizer that repeats text.
	NoSessions string
}

// ChatTemplateOllamaTemplate is Ollama v0.17.4's template of a model for which it detects none
// from the GGUF: the last prompt alone, no conversation format.
const ChatTemplateOllamaTemplate = "{{ .Prompt }}"

// OllamaChatOf returns how Ollama renders the synthetic model of family f (the findings of the
// families' live tests, Ollama v0.17.4):
//
//   - qwen3: the built-in qwen3.5 renderer and parser (Qwen3-VL's format, the lab's reference).
//   - deepseek-v3: the built-in deepseek3.1 renderer and deepseek3 parser: DeepSeek V3.1's format
//     (a `</think>` after `<｜Assistant｜>`, its own tool block), a stand-in for the V3 template
//     the GGUF holds, which Ollama detects no Go template for (the prompt would be the last
//     message alone). Its sessions cannot be measured: Ollama's tokenizer repeats text.
//   - gemma3: no renderer; the gemma3-instruct Go template Ollama detects (no tools).
//   - llama3.2: no renderer or parser; the lab's own Go template in Llama 3.2's format
//     ([Llama32OllamaTemplate]), since Ollama has no template with tools for it.
//   - llama3.1: the same Go template, Llama 3.2's format, a stand-in for Llama 3.1's (nearly
//     the same: Llama 3.1's writes the date "26 Jul 2024" unless told otherwise): the npm
//     package and so the GGUF have Llama 3's short template, and the llama3-instruct Go
//     template Ollama detects from it has no tools. The two vocabularies are one but for the
//     added tokens' names, and both end a turn with <|eot_id|>.
//
// Gemma 3's sessions cannot be measured either ([OllamaChat].NoSessions): the lab's sessions
// offer tools.
//
// gpt-oss is an error: its GGUF has no chat template, Ollama detects none and its harmony path
// needs one, so the prompt would be the last message alone.
func OllamaChatOf(f gguf.Family) (OllamaChat, error) {
	switch f.OrQwen3() {
	case gguf.Qwen3:
		return OllamaChat{Renderer: modelRenderer, Parser: modelParser, Template: "Ollama's built-in qwen3.5 renderer"}, nil
	case gguf.DeepSeekV3:
		return OllamaChat{Renderer: "deepseek3.1", Parser: "deepseek3",
			Template: "Ollama's built-in deepseek3.1 renderer (DeepSeek V3.1's format, a stand-in for the GGUF's V3 template)",
			NoSessions: "Ollama's byte-pair encoder repeats text with DeepSeek V3's three-pattern pre-tokenizer (tokenizer/bytepairencoding.go split): " +
				"midnight's second request, 7,706 characters, became 92,523 tokens, cut to num_ctx"}, nil
	case gguf.Gemma3:
		return OllamaChat{Template: "Ollama's gemma3-instruct Go template, detected from the GGUF's", NoSessions: "its template has no tools, and Ollama refuses every request that offers some (\"does not support tools\"), as the lab's sessions do"}, nil
	case gguf.Llama31:
		return OllamaChat{GoTemplate: Llama32OllamaTemplate, ReplyEnd: "<|eot_id|>",
			Template: "the lab's Go template in Llama 3.2's format (localserver.Llama32OllamaTemplate), a stand-in for Llama 3.1's own: the GGUF has Llama 3's template, without tools, and Ollama's llama3-instruct detected from it refuses tools"}, nil
	case gguf.Llama32:
		return OllamaChat{GoTemplate: Llama32OllamaTemplate, ReplyEnd: "<|eot_id|>",
			Template: "the lab's Go template in Llama 3.2's format (localserver.Llama32OllamaTemplate: JSON compact with sorted keys, contents untrimmed, parallel tool calls one a line)"}, nil
	case gguf.GPTOSS:
		return OllamaChat{}, fmt.Errorf("family %s on Ollama: the GGUF has no chat template (the npm package has none), so Ollama detects none "+
			"and its harmony renderer stays off: the prompt would be the last message alone (%s); serve it on llama-server (--server llamacpp)", f, ChatTemplateOllamaTemplate)
	}
	return OllamaChat{}, fmt.Errorf("family %q: unknown", f)
}

// LlamaChatTemplateOf says, for the manifest's chat_template setting, what llama-server --jinja
// renders the synthetic model of family f with: the GGUF's tokenizer.chat_template (the npm
// package's chat_template, verbatim), or, for gpt-oss, whose GGUF has none, llama-server's
// ChatML fallback (build 11669: `<|im_start|>role ... <|im_end|>`, not gpt-oss's harmony format).
func LlamaChatTemplateOf(f gguf.Family) string {
	if f.OrQwen3() == gguf.GPTOSS {
		return "llama-server's ChatML fallback (the GGUF has no chat template)"
	}
	return "the GGUF's tokenizer.chat_template (" + f.OrQwen3().TokenizerPackage() + "), llama-server --jinja"
}

// LlamaNoSessions says why the lab's sessions cannot be measured on the synthetic model of
// family f in llama-server b11669 --jinja, "" when they can (Qwen3, DeepSeek V3, Llama 3.1:
// midnight's first turn measured, expected equal to cached on every request; Llama 3.2 on the
// sessions without two tool calls in one message, which its template refuses, "This model
// only supports single tool-calls at once!": of the lab's scenarios, reasoning-tool-loops,
// expected equal to cached on all its 28 requests):
//
//   - gemma3: the GGUF's template raises "Conversation roles must alternate
//     user/assistant/user/assistant/..." at a tool result or two assistant messages in a row,
//     which every session of the lab has (/apply-template answers HTTP 400);
//   - gpt-oss: no template, so llama-server's ChatML fallback, whose rendering of a reply lacks
//     the model's end-of-generation token (<|return|>): the lab cannot write a reply into the
//     cache, and every request would re-read the previous one's.
func LlamaNoSessions(f gguf.Family) string {
	switch f.OrQwen3() {
	case gguf.Gemma3:
		return "Gemma 3's chat template raises \"Conversation roles must alternate user/assistant\" at a tool result or two assistant messages in a row, which every lab session has"
	case gguf.GPTOSS:
		return "the GGUF has no chat template, and llama-server's ChatML fallback renders replies without gpt-oss's end token <|return|>, so the lab cannot write a reply into the cache"
	}
	return ""
}

// FamilyOfModelFile returns the family of a synthetic model file by its name in the cache,
// lab-<family>-synth-<key>.gguf ([PrepareModel] with the default model name); [gguf.Qwen3] for
// any other name (the Qwen3 model's lab-qwen3-synth-<key>.gguf, a user's own file).
func FamilyOfModelFile(path string) gguf.Family {
	base := filepath.Base(path)
	for _, f := range gguf.Families() {
		if strings.HasPrefix(base, "lab-"+string(f)+"-synth-") {
			return f
		}
	}
	return gguf.Qwen3
}
