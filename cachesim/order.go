package cachesim

import "strconv"

// RenderOrder is the order in which a provider's prompt puts a request's system prompt and its
// tool list before the messages: what a cache model's prefix is made of, and so which parts a
// change in one of them re-reads. The zero value is [SystemThenTools]. Both come before every
// message in each order, so a change to either is a re-read of everything after it (spec 3.2.0
// §10; §10.1 keeps the system prompt fixed, §10.4 the tool list); the order decides whether the
// other of the two is re-read too.
//
// Sources: the Qwen3 chat template (Ollama v0.17.4 model/renderers/qwen3vl.go, the sim's
// renderer; llama.cpp renders the same template); Anthropic's prompt caching ("prefix order
// tools → system → messages", /work/shared/reference/backends.md §6); OpenAI's prompt-caching
// guide says only that tools must be identical between requests, and the harmony format of its
// open-weight models (gpt-oss) writes the function tools in the developer message after the
// instructions, so the lab takes OpenAI's order to be the system prompt's, then the tools'.
type RenderOrder uint8

const (
	// SystemThenTools is the system prompt, then the tool list, then the messages: Qwen3's chat
	// template (the tool list inside the system turn, after the system prompt's text), as
	// Ollama and llama.cpp render it, and OpenAI's order (instructions, then tools). A tool-list
	// change keeps the system prompt cached and re-reads the tools and every message; a
	// system-prompt change re-reads everything.
	SystemThenTools RenderOrder = iota
	// ToolsThenSystem is the tool list, then the system prompt, then the messages: the
	// Anthropic Messages API's cache prefix. A system-prompt change keeps the tools cached and
	// re-reads the system prompt and every message; a tool-list change re-reads everything.
	ToolsThenSystem
)

// String returns "system, tools, messages" or "tools, system, messages" (the order's parts, as
// the README lists them); "RenderOrder(N)" for a value outside the constants.
func (o RenderOrder) String() string {
	switch o {
	case SystemThenTools:
		return "system, tools, messages"
	case ToolsThenSystem:
		return "tools, system, messages"
	}
	return "RenderOrder(" + strconv.Itoa(int(o)) + ")"
}

// OrderOf returns the render order of the provider the cache model called name stands for
// ([NewModel]'s names): [ToolsThenSystem] for "anthropic", [SystemThenTools] for the others
// ("ideal", "llamacpp" and "vllm" serve Qwen3's template; "openai" is OpenAI's order) and for a
// name NewModel does not know.
func OrderOf(name string) RenderOrder {
	if name == ModelAnthropic {
		return ToolsThenSystem
	}
	return SystemThenTools
}
