package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	ollamaapi "github.com/ollama/ollama/api"

	"lab/backend/anthropic"
	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/chat"
	"lab/internal/wire"
)

// The APIs the proxy records; each names the rows' backend as "proxy:" + API.
const (
	// APIOpenAIChat is Chat Completions, POST …/chat/completions (OpenAI, vLLM, SGLang,
	// DeepSeek, OpenRouter, llama-server's /v1/chat/completions).
	APIOpenAIChat = "openai-chat"
	// APIOpenAIResponses is OpenAI's Responses API, POST …/responses.
	APIOpenAIResponses = "openai-responses"
	// APIAnthropic is the Anthropic Messages API, POST …/messages.
	APIAnthropic = "anthropic"
	// APIOllamaChat is Ollama's POST /api/chat.
	APIOllamaChat = "ollama-chat"
	// APIOllamaGenerate is Ollama's POST /api/generate.
	APIOllamaGenerate = "ollama-generate"
	// APILlamaCppCompletion is llama-server's native POST /completion.
	APILlamaCppCompletion = "llamacpp-completion"
)

// APIs are the APIs [DecodeRequest] decodes, in the order errors list them.
var APIs = []string{APIOpenAIChat, APIOpenAIResponses, APIAnthropic, APIOllamaChat, APIOllamaGenerate, APILlamaCppCompletion}

// DecodeKnownRequest is [DecodeRequest] of an API it decodes: an api not among [APIs] (a line
// of another capture's, a name mistyped) is an error naming the api field's value and the APIs
// known, never an empty request. It is the decoder of a captured request replayed as it was
// sent, whose conversation must not be lost.
func DecodeKnownRequest(api string, body []byte) (*chat.Request, error) {
	if !slices.Contains(APIs, api) {
		return nil, fmt.Errorf("api %q is not one the lab decodes (want one of %s)", api, strings.Join(APIs, ", "))
	}
	return DecodeRequest(api, body)
}

// Classify returns the API a request speaks by its method and path, "" for a request the proxy
// passes through unrecorded (anything but a POST to one of the endpoints above; token counting
// endpoints such as /v1/messages/count_tokens included).
func Classify(method, path string) string {
	if method != "POST" {
		return ""
	}
	path = strings.TrimRight(path, "/")
	switch {
	case path == "/api/chat":
		return APIOllamaChat
	case path == "/api/generate":
		return APIOllamaGenerate
	case path == "/completion" || path == "/completions":
		return APILlamaCppCompletion
	case strings.HasSuffix(path, "/chat/completions"):
		return APIOpenAIChat
	case strings.HasSuffix(path, "/responses"):
		return APIOpenAIResponses
	case strings.HasSuffix(path, "/messages") && !strings.Contains(path, "/threads/"):
		// Not OpenAI's Assistants API, POST /v1/threads/{id}/messages.
		return APIAnthropic
	}
	return ""
}

// apiSlotErase names llama-server's POST /slots/{id}?action=erase (lab run's Reset between
// sessions), which empties the slot's KV cache: it makes no row, and the slot model is emptied.
const apiSlotErase = "llamacpp-slot-erase"

// isSlotErase reports whether a request is llama-server's slot erase: POST /slots/{id} with
// action=erase (llama-server README, "POST /slots/{id_slot}?action=erase").
func isSlotErase(method string, u *url.URL) bool {
	id, ok := strings.CutPrefix(strings.TrimRight(u.Path, "/"), "/slots/")
	if method != "POST" || !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		return false
	}
	return u.Query().Get("action") == "erase"
}

// envelope is what the proxy reads of every recorded request body besides its conversation:
// the fields that name the model, ask for a stream, key the provider's prompt cache, or make
// the request a cache fill or a rendering rather than a generation.
type envelope struct {
	Model          string          `json:"model"`
	Stream         *bool           `json:"stream"`
	PromptCacheKey string          `json:"prompt_cache_key"`
	DebugRender    bool            `json:"_debug_render_only"`
	Raw            bool            `json:"raw"`
	Prompt         presence        `json:"prompt"`
	NPredict       *int            `json:"n_predict"`
	KeepAlive      json.RawMessage `json:"keep_alive"`
	Options        struct {
		NumPredict *int `json:"num_predict"`
	} `json:"options"`
}

// presence is a JSON field read only for whether it holds something (not absent, null or ""):
// the proxy's handlers read the envelope of every request at once, and a prompt is as long as
// the body. The recorder reads the prompt itself ([promptOf]).
type presence bool

func (p *presence) UnmarshalJSON(b []byte) error {
	*p = presence(string(b) != "null" && string(b) != `""`)
	return nil
}

// promptOf returns a request body's "prompt" string (Ollama /api/generate, llama-server
// /completion); ok is false when it has none or it is not a string.
func promptOf(body []byte) (prompt string, ok bool) {
	var b struct {
		Prompt *string `json:"prompt"`
	}
	if json.Unmarshal(body, &b) != nil || b.Prompt == nil {
		return "", false
	}
	return *b.Prompt, true
}

// skip reports why a request of api with envelope e is passed through unrecorded: it renders
// a prompt (Ollama `_debug_render_only`), loads a model (an /api/generate without a prompt),
// unloads it ("unload": the same with keep_alive 0, which drops the server's KV cache; the
// slot model is emptied, as lab run empties its own after its Reset; so does llama-server's
// slot erase, [apiSlotErase]), or only fills the cache
// (llama-server /completion with n_predict 0; a raw Ollama generate with num_predict at most 1
// — the lab's own generation emulation, which leaves the server's cache as a generation would
// and is modelled as such, see [Options].Attribution). "" records the request.
func skip(api string, e *envelope) string {
	switch api {
	case APIOllamaChat:
		if e.DebugRender {
			return "render"
		}
	case APIOllamaGenerate:
		if !e.Prompt {
			var d ollamaapi.Duration
			if len(e.KeepAlive) > 0 && d.UnmarshalJSON(e.KeepAlive) == nil && d.Duration == 0 {
				return "unload"
			}
			return "load"
		}
		if e.Raw && e.Options.NumPredict != nil && *e.Options.NumPredict <= 1 {
			return "fill"
		}
	case APILlamaCppCompletion:
		if e.NPredict != nil && *e.NPredict == 0 {
			return "fill"
		}
	case apiSlotErase:
		return "unload"
	}
	return ""
}

// DecodeRequest reads a request's conversation (api one of the API constants above) with the
// inverse of its backend's encoder: the messages, tool list and options as *chat.Request. An
// API the proxy does not decode gives an empty request; the error is the decoder's, naming the
// body's problem.
func DecodeRequest(api string, body []byte) (*chat.Request, error) {
	switch api {
	case APIOpenAIChat:
		return openai.DecodeChatRequest(body)
	case APIOpenAIResponses:
		return openai.DecodeResponsesRequest(body)
	case APIAnthropic:
		return anthropic.DecodeRequest(body)
	case APIOllamaChat:
		return ollama.DecodeChatRequest(body)
	case APIOllamaGenerate:
		req, _, _, err := ollama.DecodeGenerateRequest(body)
		return req, err
	case APILlamaCppCompletion:
		var b struct {
			Prompt json.RawMessage `json:"prompt"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, err
		}
		var text string
		if json.Unmarshal(b.Prompt, &text) != nil {
			text = string(b.Prompt) // token ids or a list of prompts: kept as their JSON
		}
		return &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: text}}}, nil
	}
	return &chat.Request{}, nil
}

// parser reads one answer: the events of a server-sent event stream, the lines of an NDJSON
// stream, or a whole body.
type parser interface {
	// event takes one server-sent event (name and data) or one NDJSON line (name "") and
	// reports whether it carried generated content, reasoning or a tool call.
	event(name string, data []byte) (content bool, err error)
	// whole takes an unstreamed answer.
	whole(body []byte) error
	// end reports whether the answer was whole (its end marker came): nil, or the
	// *chat.APIError ([chat.CutError]) naming what it lacked.
	end() error
	reply() *chat.Reply
	result() *chat.Result
}

// newParser returns the parser for api's answers, built on its backend's own.
func newParser(api string) parser {
	switch api {
	case APIOpenAIChat:
		return &chatParser{}
	case APIOpenAIResponses:
		return &responsesParser{}
	case APIAnthropic:
		return &anthropicParser{}
	case APIOllamaChat, APIOllamaGenerate:
		return &ollamaParser{}
	case APILlamaCppCompletion:
		return &completionParser{}
	}
	return nil
}

type chatParser struct{ c openai.ChatCapture }

func (p *chatParser) event(name string, data []byte) (bool, error) {
	if name == "error" { // llama-server's older in-stream error line
		return false, &chat.APIError{Backend: "openai", Body: "error in the stream: " + string(data)}
	}
	return p.c.Chunk(data)
}
func (p *chatParser) whole(b []byte) error { return p.c.Whole(b) }
func (p *chatParser) end() error           { return p.c.End() }
func (p *chatParser) reply() *chat.Reply   { return p.c.Reply() }
func (p *chatParser) result() *chat.Result { return p.c.Result() }

type responsesParser struct{ c openai.ResponsesCapture }

func (p *responsesParser) event(_ string, data []byte) (bool, error) { return p.c.Event(data) }
func (p *responsesParser) whole(b []byte) error                      { return p.c.Whole(b) }
func (p *responsesParser) end() error                                { return p.c.End() }
func (p *responsesParser) reply() *chat.Reply                        { return p.c.Reply() }
func (p *responsesParser) result() *chat.Result                      { return p.c.Result() }

type anthropicParser struct{ c anthropic.Capture }

func (p *anthropicParser) event(name string, data []byte) (bool, error) { return p.c.Event(name, data) }
func (p *anthropicParser) whole(b []byte) error                         { return p.c.Whole(b) }
func (p *anthropicParser) end() error                                   { return p.c.End() }
func (p *anthropicParser) reply() *chat.Reply                           { return p.c.Reply() }
func (p *anthropicParser) result() *chat.Result                         { return p.c.Result() }

type ollamaParser struct{ c ollama.Capture }

func (p *ollamaParser) event(_ string, data []byte) (bool, error) { return p.c.Line(data) }
func (p *ollamaParser) whole(b []byte) error {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if _, err := p.c.Line(line); err != nil {
			return err
		}
	}
	return nil
}
func (p *ollamaParser) end() error           { return p.c.End() }
func (p *ollamaParser) reply() *chat.Reply   { return p.c.Reply() }
func (p *ollamaParser) result() *chat.Result { return p.c.Result() }

type completionParser struct{ c llamacpp.CompletionCapture }

func (p *completionParser) event(_ string, data []byte) (bool, error) { return p.c.Chunk(data) }
func (p *completionParser) whole(b []byte) error {
	_, err := p.c.Chunk(b)
	return err
}
func (p *completionParser) end() error           { return p.c.End() }
func (p *completionParser) reply() *chat.Reply   { return p.c.Reply() }
func (p *completionParser) result() *chat.Result { return p.c.Result() }

// feed splits an answer's bytes into what its parser takes and calls it: server-sent events
// (text/event-stream, read by [wire.ReadEventsIn]: "event:" and "data:" lines, a blank line
// ending each event, ":" comments skipped, llama-server's older "error:" line as an error
// event), NDJSON lines (Ollama, read by [wire.ReadLinesIn]), or the whole body (anything else):
// the very readers the backends read their answers with. It returns the index of the first
// chunk (in chunks) whose bytes completed an event that carried content (-1 when none did) and
// the first error a parser returned.
//
// Time and memory are linear in the answer, and a line is copied only when it spans chunks
// (once, into a buffer of its length): a line, and an event of one data line, within a chunk is
// handed to the parser in place. What the parser is handed stays unchanged (chunks are never
// written to); it must not write to it.
func feed(p parser, mode framing, chunks []chunk) (first int, err error) {
	first = -1
	if mode == framingWhole {
		body := joinChunks(chunks)
		if len(bytes.TrimSpace(body)) == 0 {
			return -1, nil
		}
		if err := p.whole(body); err != nil {
			return -1, err
		}
		if len(chunks) > 0 {
			first = 0
		}
		return first, nil
	}
	pieces := make([][]byte, len(chunks))
	for i, c := range chunks {
		pieces[i] = c.data
	}
	event := func(name string, data []byte, at int) error {
		content, err := p.event(name, data)
		if content && first < 0 {
			first = at
		}
		return err
	}
	if mode == framingLines {
		_, err = wire.ReadLinesIn(pieces, func(line []byte, at int) error { return event("", line, at) })
	} else {
		_, err = wire.ReadEventsIn(pieces, event)
	}
	return first, err
}

// framingOf returns how an HTTP 2xx answer of api is read, from its form ([chat.SniffAnswer]
// of its Content-Type and first bytes): server-sent events, Ollama's JSON lines (its JSON
// answer too, which is one line), or a whole JSON body; ok is false for a form api does not
// answer with (an HTML page, an empty body, JSON lines from an API that streams events).
func framingOf(api string, form chat.AnswerForm) (mode framing, ok bool) {
	ollama := api == APIOllamaChat || api == APIOllamaGenerate
	switch {
	case form == chat.AnswerEvents && !ollama:
		return framingSSE, true
	case form == chat.AnswerJSON && !ollama:
		return framingWhole, true
	case (form == chat.AnswerJSON || form == chat.AnswerLines) && ollama:
		return framingLines, true
	}
	return framingWhole, false
}

// framing is how an answer's bytes are split into events.
type framing int

const (
	framingWhole framing = iota
	framingSSE
	framingLines
)
