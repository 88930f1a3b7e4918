package localserver

import (
	"fmt"
	"strings"

	"lab/gguf"
)

// End-of-generation texts of the ChatML formats (Qwen3's and those written like it).
const (
	// imEnd ends every ChatML turn, a reply's included: a token of Qwen3's vocabulary.
	imEnd = "<|im_end|>"
	// glmObservation and glmUser are the texts a GLM reply stops at (GLM's formats write no
	// end of turn: the next turn's role token ends it): the tool results' turn after a reply
	// with calls, the next user message after a final answer.
	glmObservation, glmUser = "<|observation|>", "<|user|>"
)

// What counts the tokens of the renderers' models (OllamaChat.Tokens).
const (
	// qwen3Tokens is the Qwen3 model's counter, its own renderers'.
	qwen3Tokens = "Ollama's own engine (qwen3): Ollama's byte-pair encoder, counted in process (package tokenizer)"
	// deepseekTokens is the DeepSeek V3 model's counter, on the llama stand-in architecture.
	deepseekTokens = "Ollama's llama.cpp runner (the model on the llama architecture, a stand-in for deepseek2, whose engine repeats text): llama.cpp's tokenizer with DeepSeek V3's pre-tokenizer, counted as llama.cpp does (package tokenizer)"
)

// qwen3StandInTokens is the Qwen3 model's counter where it stands in for the model of another
// format (named by who), whose tokenizer the lab does not have.
func qwen3StandInTokens(who string) string {
	return "Ollama's own engine (qwen3): Ollama's byte-pair encoder with Qwen3's vocabulary, a stand-in for " + who +
		"'s tokenizer, which the lab does not have; counted in process (package tokenizer)"
}

// ollamaRenderers are Ollama v0.17.4's built-in renderers (model/renderers/renderer.go
// rendererForName, in its order), each with the parser of the same format (model/parsers/
// parsers.go ParserForName), the family whose synthetic model serves it (its own tokenizer
// where the lab has it: Qwen3 for the qwen3-* renderers, DeepSeek V3 for cogito and
// deepseek3.1, Gemma 3 for functiongemma; otherwise the Qwen3 model, a stand-in, which Template
// and Tokens say) and the texts its replies end with, read from the renderer's and parser's
// source. The families' own renderers (qwen3.5, deepseek3.1, functiongemma) are [OllamaChatOf]'s.
//
// What Ollama asks of the model follows from the parser: it sends `think` only to a parser with
// thinking (qwen3-coder, qwen3-vl-instruct, olmo3, functiongemma, glm-ocr and lfm2 have none,
// so their renderers see no think value), and refuses tools (HTTP 400 "does not support
// tools") to a parser without tool support unless the model's Go template reads .Tools.
var ollamaRenderers = []OllamaChat{
	{Renderer: "qwen3-coder", Parser: "qwen3-coder", Family: gguf.Qwen3,
		Template:  "Ollama's built-in qwen3-coder renderer (Qwen3-Coder's format: the tools as XML in the system turn, calls as <function=name> blocks; no reasoning: its parser does not think, and the history never renders it)",
		Tokens:    qwen3Tokens,
		ReplyEnds: []string{imEnd}},
	{Renderer: "qwen3-vl-instruct", Parser: "qwen3-vl-instruct", Family: gguf.Qwen3,
		Template:  "Ollama's built-in qwen3-vl-instruct renderer (Qwen3-VL Instruct's format, qwen3.5's without thinking: its parser does not think, so the history never renders reasoning)",
		Tokens:    qwen3Tokens,
		ReplyEnds: []string{imEnd}},
	// The qwen3.5 renderer with thinking asked for: the same generation prompt (<think>\n) and
	// history, so the reply is written as Qwen3 writes it (ReplyEnds nil).
	{Renderer: "qwen3-vl-thinking", Parser: "qwen3-vl-thinking", Family: gguf.Qwen3,
		Template: "Ollama's built-in qwen3-vl-thinking renderer (Qwen3-VL Thinking's format: qwen3.5's with thinking on, reasoning kept after the last user message)",
		Tokens:   qwen3Tokens},
	{Renderer: modelRenderer, Parser: modelParser, Family: gguf.Qwen3, Template: "Ollama's built-in qwen3.5 renderer", Tokens: qwen3Tokens},
	// Cogito's history writes no <｜Assistant｜> after tool outputs, its generation prompt does:
	// each request after a tool result parts from the cache there.
	{Renderer: "cogito", Parser: "cogito", Family: gguf.DeepSeekV3, StandIn: gguf.StandInLlama,
		Template:  "Ollama's built-in cogito renderer (Deep Cogito's format on DeepSeek V3's tokens: its own system prompt before the conversation's, the tools as JSON blocks, V3's call and tool-output tokens; the history never renders reasoning and writes no <｜Assistant｜> after tool outputs)",
		Tokens:    deepseekTokens,
		ReplyEnds: []string{deepseekEnd}},
	{Renderer: "deepseek3.1", Parser: "deepseek3", Family: gguf.DeepSeekV3, StandIn: gguf.StandInLlama,
		Template:  "Ollama's built-in deepseek3.1 renderer (DeepSeek V3.1's format, a stand-in for the GGUF's V3 template)",
		Tokens:    deepseekTokens,
		ReplyEnds: []string{deepseekEnd}},
	{Renderer: "olmo3", Parser: "olmo3", Family: gguf.Qwen3,
		Template:  "Ollama's built-in olmo3 renderer (OLMo 3 Instruct's format: ChatML, the functions as JSON in the system turn, calls as name(arg=value) in <function_calls>, results as an environment turn; no reasoning) on the Qwen3 model, a stand-in: <|im_start|> and <|im_end|> are Qwen3 tokens too, OLMo's other control texts plain text",
		Tokens:    qwen3StandInTokens("OLMo 3"),
		ReplyEnds: []string{imEnd}},
	{Renderer: "olmo3.1", Parser: "olmo3", Family: gguf.Qwen3,
		Template:  "Ollama's built-in olmo3.1 renderer (olmo3's format with OLMo 3.1's default system prompt) on the Qwen3 model, a stand-in: <|im_start|> and <|im_end|> are Qwen3 tokens too, OLMo's other control texts plain text",
		Tokens:    qwen3StandInTokens("OLMo 3.1"),
		ReplyEnds: []string{imEnd}},
	{Renderer: "olmo3-think", Parser: "olmo3-think", Family: gguf.Qwen3,
		Template:   "Ollama's built-in olmo3-think renderer (OLMo 3 Think's format: ChatML, no tools, tool calls and results dropped, the generation prompt opening <think>) on the Qwen3 model, a stand-in",
		Tokens:     qwen3StandInTokens("OLMo 3 Think"),
		ReplyEnds:  []string{imEnd},
		NoSessions: olmoThinkNoTools},
	{Renderer: "olmo3-32b-think", Parser: "olmo3-think", Family: gguf.Qwen3,
		Template:   "Ollama's built-in olmo3-32b-think renderer (olmo3-think's format with OLMo 3 32B Think's default system prompt) on the Qwen3 model, a stand-in",
		Tokens:     qwen3StandInTokens("OLMo 3 32B Think"),
		ReplyEnds:  []string{imEnd},
		NoSessions: olmoThinkNoTools},
	{Renderer: "nemotron-3-nano", Parser: "nemotron-3-nano", Family: gguf.Qwen3,
		Template:  "Ollama's built-in nemotron-3-nano renderer (Nemotron 3 Nano's format: ChatML, the tools and calls as Qwen3-Coder's XML, reasoning kept after the last user message and written <think></think> before it) on the Qwen3 model, a stand-in: its <|im_start|>, <|im_end|>, <think>, <tool_call> and <tool_response> are Qwen3 tokens too",
		Tokens:    qwen3StandInTokens("Nemotron 3 Nano"),
		ReplyEnds: []string{imEnd}},
	{Renderer: "functiongemma", Parser: "functiongemma", Family: gguf.Gemma3,
		Template:  "Ollama's built-in functiongemma renderer (FunctionGemma's format, Gemma 3 270M's function calling; its control texts are plain text in Gemma 3's vocabulary)",
		Tokens:    "Ollama's own engine (gemma3): Ollama's SentencePiece, counted in process with github.com/ollama/ollama/tokenizer (package tokenizer)",
		ReplyEnds: []string{gemmaEndOfTurn, gemmaFunctionResponse}},
	{Renderer: "glm-4.7", Parser: "glm-4.7", Family: gguf.Qwen3,
		Template:  "Ollama's built-in glm-4.7 renderer (GLM-4.7's format: [gMASK]<sop>, <|system|>, <|user|>, <|assistant|> and <|observation|> turns with no end of turn, reasoning kept in every turn) on the Qwen3 model, a stand-in: GLM's role texts are plain text in Qwen3's vocabulary, <think>, <tool_call> and <tool_response> Qwen3 tokens",
		Tokens:    qwen3StandInTokens("GLM-4.7"),
		ReplyEnds: []string{glmObservation, glmUser}},
	{Renderer: "glm-ocr", Parser: "glm-ocr", Family: gguf.Qwen3,
		Template:  "Ollama's built-in glm-ocr renderer (GLM-OCR's format: glm-4.7's turns with line breaks, <think></think> before every reply in the history, none in the generation prompt: its parser does not think) on the Qwen3 model, a stand-in: GLM's role texts are plain text in Qwen3's vocabulary",
		Tokens:    qwen3StandInTokens("GLM-OCR"),
		ReplyEnds: []string{glmObservation, glmUser}},
	{Renderer: "lfm2", Parser: "lfm2", Family: gguf.Qwen3,
		Template:  "Ollama's built-in lfm2 renderer (LFM2's format: <|startoftext|>, ChatML turns, the tools as a JSON list in <|tool_list_start|>, calls as a Python-like list in <|tool_call_start|>, results in <|tool_response_start|>; no reasoning) on the Qwen3 model, a stand-in: <|im_start|> and <|im_end|> are Qwen3 tokens too, LFM2's other control texts plain text",
		Tokens:    qwen3StandInTokens("LFM2"),
		ReplyEnds: []string{imEnd}},
	{Renderer: "lfm2-thinking", Parser: "lfm2-thinking", Family: gguf.Qwen3,
		Template:      "Ollama's built-in lfm2-thinking renderer (lfm2's format with thinking asked for: the model writes <think>reasoning</think> before its reply, which the history never renders) on the Qwen3 model, a stand-in: <|im_start|>, <|im_end|>, <think> and </think> are Qwen3 tokens too, LFM2's other control texts plain text",
		Tokens:        qwen3StandInTokens("LFM2"),
		ReplyEnds:     []string{imEnd},
		ReasoningTags: [2]string{"<think>", "</think>"}},
}

// olmoThinkNoTools is why the olmo3-think renderers cannot run the lab's sessions.
const olmoThinkNoTools = "the olmo3-think parser has no tool support, so Ollama refuses every request that offers tools (HTTP 400 \"does not support tools\"), and the renderer drops tool calls and results"

// OllamaRenderers returns how Ollama v0.17.4 serves the synthetic models with each of its
// built-in renderers, in model/renderers/renderer.go's order: one [OllamaChat] per renderer,
// its Renderer the name, its Family the model it is served with (see [OllamaChatOfRenderer]).
func OllamaRenderers() []OllamaChat {
	out := make([]OllamaChat, len(ollamaRenderers))
	for i, c := range ollamaRenderers {
		c.ReplyEnds = append([]string(nil), c.ReplyEnds...)
		out[i] = c
	}
	return out
}

// RendererNames returns the built-in renderers' names, in [OllamaRenderers] order.
func RendererNames() []string {
	names := make([]string, len(ollamaRenderers))
	for i, c := range ollamaRenderers {
		names[i] = c.Renderer
	}
	return names
}

// OllamaChatOfRenderer returns how the lab serves a synthetic model with Ollama v0.17.4's
// built-in renderer name ([OllamaRenderers]); an error for a name that is none of them, listing
// them.
func OllamaChatOfRenderer(name string) (OllamaChat, error) {
	for _, c := range OllamaRenderers() {
		if c.Renderer == name {
			return c, nil
		}
	}
	return OllamaChat{}, fmt.Errorf("renderer %q: not one of Ollama %s's built-in renderers (%s)", name, OllamaVersion, strings.Join(RendererNames(), ", "))
}

// IsFamilyFormat reports whether c is how its family is served by default ([OllamaChatOf]): the
// family's own renderer (qwen3.5, deepseek3.1, functiongemma).
func (c OllamaChat) IsFamilyFormat() bool {
	d, err := OllamaChatOf(c.Family)
	return err == nil && d.Renderer == c.Renderer && d.Parser == c.Parser && d.GoTemplate == c.GoTemplate
}

// ModelName is the name the lab registers the synthetic model served as c under on Ollama:
// lab-<family>-synth for the family's own format ([OllamaChat.IsFamilyFormat]; the Qwen3 model's
// [DefaultModelName]), lab-<family>-<renderer>-synth for another renderer ("lab-qwen3-glm-4.7-synth").
func (c OllamaChat) ModelName() string {
	fam := c.Family.OrQwen3()
	if c.IsFamilyFormat() || c.Renderer == "" {
		return "lab-" + string(fam) + "-synth"
	}
	return "lab-" + string(fam) + "-" + c.Renderer + "-synth"
}

// OllamaChatOfRendererOn is [OllamaChatOfRenderer] on the synthetic model of family f instead
// of the renderer's own Family: f's tokenizer, architecture and counter ([OllamaChatOf] f's
// StandIn and Tokens), the renderer's reply ends, reasoning tags and NoSessions; Template says
// the model is f's, given for it. For f the renderer's own family it is OllamaChatOfRenderer.
// Errors: an unknown renderer, or a family Ollama cannot serve ([OllamaChatOf]: gpt-oss).
func OllamaChatOfRendererOn(name string, f gguf.Family) (OllamaChat, error) {
	c, err := OllamaChatOfRenderer(name)
	if err != nil || f.OrQwen3() == c.Family.OrQwen3() {
		return c, err
	}
	fc, err := OllamaChatOf(f)
	if err != nil {
		return OllamaChat{}, err
	}
	c.Template = "Ollama's built-in " + name + " renderer on the " + string(f.OrQwen3()) + " model (a stand-in chosen for it; the table's is " +
		string(c.Family.OrQwen3()) + "'s): its control texts tokenized as " + string(f.OrQwen3()) + "'s vocabulary has them"
	c.Family, c.StandIn, c.Tokens = f.OrQwen3(), fc.StandIn, fc.Tokens
	return c, nil
}
