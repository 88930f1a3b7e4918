package scriptmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"lab/backend/ollama"
	"lab/capture"
	"lab/chat"
)

// Options are the inputs of [New].
type Options struct {
	// Upstream is the base URL of the real Ollama server that prefills every prompt (its root,
	// such as http://127.0.0.1:11434).
	Upstream string
	// Script is the session the model follows.
	Script *Script
	// Env is what the intents are mapped with: the agent's working directory and name.
	Env Env
	// CountTokens counts the tokens of a reply as the served model writes it (its tokenizer);
	// nil reports no completion tokens.
	CountTokens func(text string) (int, error)
	// Events, when not nil, receives one JSON line per request answered ([Event]).
	Events io.Writer
	// Client is the HTTP client for the upstream; nil is a client without a time limit.
	Client *http.Client
}

// Event is one request the scripted model answered, as [Options].Events receives it.
type Event struct {
	// N is the request's number, from 1, in order of arrival.
	N   int `json:"n"`
	API API `json:"api"`
	// Turn and Step are the script's turn and step answered (1-based); 0 for a side request.
	Turn int `json:"turn"`
	Step int `json:"step"`
	// Intent is the step's intent as written ("read greet.go"); "" for a side request.
	Intent string `json:"intent,omitempty"`
	// Call is the tool call the intent became ("" for an answer).
	Call string `json:"call,omitempty"`
	// Skipped are the intents skipped before this step, each with why.
	Skipped []string `json:"skipped,omitempty"`
	// Side says why the request was answered outside the script ("" when it was not).
	Side string `json:"side,omitempty"`
	// PromptTokens is the upstream's prompt_eval_count for the measured prefill.
	PromptTokens int `json:"prompt_tokens"`
	// Error is why the request failed ("" when it was answered).
	Error string `json:"error,omitempty"`
}

// Server is the scripted model: an http.Handler that answers the model requests of an agent
// (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Ollama /api/chat) with the
// script's next step, in that API's own format, while the real upstream server does the real
// prefill. For each such request it
//
//  1. converts the request to the /api/chat request Ollama itself makes of it
//     ([ollama.CompatibleChatRequest], Ollama v0.17.4's own conversion) and asks the upstream
//     for its rendering (`_debug_render_only`);
//  2. sends it to the upstream with num_predict 1: the measured prefill, whose cache line a lab
//     proxy in front of this server reads from the server log;
//  3. answers the agent with the script's step: a tool call mapped onto the agent's own tool
//     list ([Map]), or the turn's answer, with the prefill's prompt_eval_count as its prompt
//     tokens;
//  4. leaves the server's KV cache as a real generation of that reply would (the lab's
//     generation emulation, DESIGN.md "Generation is emulated faithfully"): a raw /api/generate
//     of the rendering followed by the reply as Qwen3 writes it ([ollama.Qwen3Output]).
//
// Which step a request gets is read from the request itself: the turn is the latest user
// message that holds a turn's prompt, the step the number of assistant replies after it. A
// request with no tools, or with a system prompt other than the session's (a title or memory
// request), is answered with a short text outside the script. Every other request (the
// rendering the proxy asks for, /api/show, /v1/models) passes through to the upstream. Requests
// are served one at a time: the next prefill waits for the previous fill.
type Server struct {
	opts     Options
	upstream *url.URL
	client   *api.Client
	pass     *httputil.ReverseProxy
	// renderer asks the upstream for its renderings (the request's own model named in each).
	renderer *ollama.Client

	mu     sync.Mutex
	n      int
	system string // the session's system prompt (systemPrefix), once seen
}

// New returns the scripted model in front of o.Upstream. Errors name the bad option.
func New(o Options) (*Server, error) {
	u, err := url.Parse(o.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("scriptmodel: upstream %q: want http://host:port of an Ollama server", o.Upstream)
	}
	if o.Script == nil || len(o.Script.Turns) == 0 {
		return nil, errors.New("scriptmodel: no script, or a script without turns")
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{}
	}
	renderer, err := ollama.New(o.Upstream, "", ollama.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("scriptmodel: %w", err)
	}
	return &Server{opts: o, upstream: u, client: api.NewClient(u, hc), renderer: renderer, pass: httputil.NewSingleHostReverseProxy(u)}, nil
}

// apiOf returns the API a model request speaks ([capture.Classify]): one of the four the
// scripted model answers, "" for anything else.
func apiOf(method, path string) API {
	switch a := API(capture.Classify(method, path)); a {
	case OpenAIChat, OpenAIResponses, Anthropic, OllamaChat:
		return a
	}
	return ""
}

// maxBody is the longest request body the scripted model reads (64 MiB).
const maxBody = 64 << 20

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := apiOf(r.Method, r.URL.Path)
	if a == "" {
		s.pass.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body.Close()
	if err != nil || len(body) > maxBody {
		WriteError(w, a, http.StatusBadRequest, fmt.Sprintf("scripted model: read the request: %v (at most %d bytes)", err, maxBody))
		return
	}
	if a == OllamaChat && renderOnly(body) {
		// The proxy's own question for the rendering: the upstream answers it.
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		s.pass.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	ev := Event{N: s.n, API: a}
	err = s.serve(r.Context(), w, a, body, &ev)
	if err != nil {
		ev.Error = err.Error()
	}
	if s.opts.Events != nil {
		b, _ := json.Marshal(ev)
		_, _ = s.opts.Events.Write(append(b, '\n'))
	}
}

// renderOnly reports whether an /api/chat body asks only for the rendering.
func renderOnly(body []byte) bool {
	var b struct {
		DebugRenderOnly bool `json:"_debug_render_only"`
	}
	return json.Unmarshal(body, &b) == nil && b.DebugRenderOnly
}

// serve answers one model request (see [Server]); an error before the answer began is written
// to the agent as the API's error.
func (s *Server) serve(ctx context.Context, w http.ResponseWriter, a API, body []byte, ev *Event) error {
	req, err := capture.DecodeRequest(string(a), body)
	if err != nil {
		WriteError(w, a, http.StatusBadRequest, "scripted model: "+err.Error())
		return err
	}
	creq, err := convert(a, body)
	if err != nil {
		WriteError(w, a, http.StatusBadRequest, "scripted model: "+err.Error())
		return err
	}
	reply, step := s.next(req, ev)
	w.Header().Set(chat.ScriptedStepHeader, step)
	for _, sk := range ev.Skipped {
		w.Header().Add(chat.ScriptedSkippedHeader, sk)
	}

	rendered, err := s.render(ctx, creq)
	if err != nil {
		WriteError(w, a, http.StatusBadGateway, "scripted model: "+err.Error())
		return err
	}
	prompt, err := s.prefill(ctx, creq)
	if err != nil {
		WriteError(w, a, http.StatusBadGateway, "scripted model: "+err.Error())
		return err
	}
	ev.PromptTokens = prompt
	out := ollama.Qwen3Output(reply)
	ans := Answer{Model: creq.Model, Reply: reply, PromptTokens: int64(prompt), ID: fmt.Sprintf("lab%06d", ev.N)}
	if s.opts.CountTokens != nil {
		if n, err := s.opts.CountTokens(out); err == nil {
			ans.CompletionTokens = int64(n)
		}
	}
	if err := WriteAnswer(w, a, streamed(a, body), ans); err != nil {
		return fmt.Errorf("write the answer: %w", err)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// The fill after the answer: the lock holds the next request until it is done.
	if err := s.fill(context.WithoutCancel(ctx), creq, rendered+out); err != nil {
		return fmt.Errorf("generation emulation: %w", err)
	}
	return nil
}

// convert returns the /api/chat request Ollama itself makes of the agent's request.
func convert(a API, body []byte) (*api.ChatRequest, error) {
	if a == OllamaChat {
		var c api.ChatRequest
		if err := json.Unmarshal(body, &c); err != nil {
			return nil, fmt.Errorf("/api/chat body: %w", err)
		}
		return &c, nil
	}
	c, err := ollama.CompatibleChatRequest(string(a), body)
	if err == nil && a == Anthropic {
		// Ollama's own conversion orders a tool_use input's keys at random: the scripted model
		// keeps them as sent, so the same request renders the same way every time (a lab proxy
		// in front of it renders the same way, Attribution.OrderedArguments).
		err = ollama.OrderAnthropicArguments(c, body)
	}
	return c, err
}

// streamed reports whether the request asked for a streamed answer: `stream` true for the
// OpenAI and Anthropic APIs, `stream` absent or true for Ollama's /api/chat.
func streamed(a API, body []byte) bool {
	var b struct {
		Stream *bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &b)
	if a == OllamaChat {
		return b.Stream == nil || *b.Stream
	}
	return b.Stream != nil && *b.Stream
}

// sideReply is the reply to a request outside the script's session.
var sideReply = &chat.Reply{Content: "Scripted session."}

// next returns the reply to req and the step header's value, filling ev.
func (s *Server) next(req *chat.Request, ev *Event) (*chat.Reply, string) {
	sys := systemPrefix(req.Messages)
	if len(req.Tools) == 0 {
		ev.Side = "no tool list"
		return sideReply, "side"
	}
	turn, at := s.findTurn(req.Messages)
	if turn < 0 {
		ev.Side = "no turn of the script's prompts in its user messages"
		return sideReply, "side"
	}
	if s.system == "" {
		s.system = sys
	} else if sys != s.system {
		ev.Side = "a system prompt other than the session's"
		return sideReply, "side"
	}
	done := assistantReplies(req.Messages[at+1:])
	t := s.opts.Script.Turns[turn]
	ev.Turn = turn + 1
	served := 0
	var skipped []string
	for i, st := range t.Steps {
		if st.Intent.Kind == "answer" || i == len(t.Steps)-1 {
			return s.stepReply(ev, i, st, chat.ToolCall{}, skipped)
		}
		call, why, err := Map(st.Intent, req.Tools, s.opts.Env)
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("turn=%d step=%d %s: %s", turn+1, i+1, st.Intent, why))
			continue
		}
		if served == done {
			return s.stepReply(ev, i, st, call, skipped)
		}
		served++
		skipped = nil
	}
	last := len(t.Steps) - 1
	return s.stepReply(ev, last, t.Steps[last], chat.ToolCall{}, skipped)
}

// stepReply is the reply of step i of the turn ev names: call, or the turn's answer when the
// step is one.
func (s *Server) stepReply(ev *Event, i int, st Step, call chat.ToolCall, skipped []string) (*chat.Reply, string) {
	ev.Step, ev.Intent, ev.Skipped = i+1, st.Intent.String(), skipped
	r := &chat.Reply{Reasoning: st.Reasoning}
	if st.Intent.Kind == "answer" || call.Name == "" {
		r.Content = st.Intent.Text
		if st.Intent.Kind != "answer" {
			r.Content = "Done."
		}
	} else {
		call.ID = CallID(ev.Turn, i+1)
		r.ToolCalls = []chat.ToolCall{call}
		ev.Call = call.Name + " " + string(call.Arguments)
	}
	return r, fmt.Sprintf("turn=%d step=%d intent=%s", ev.Turn, i+1, st.Intent.Kind)
}

// findTurn returns the index of the script's turn whose prompt the latest such user message of
// msgs holds, and that message's index; -1 when none does.
func (s *Server) findTurn(msgs []chat.Message) (turn, at int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != chat.RoleUser {
			continue
		}
		content := normPrompt(msgs[i].Content)
		for t := len(s.opts.Script.Turns) - 1; t >= 0; t-- {
			if p := normPrompt(s.opts.Script.Turns[t].User); p != "" && strings.Contains(content, p) {
				return t, i
			}
		}
	}
	return -1, -1
}

// normPrompt is a prompt as findTurn compares it: quotes unescaped (opencode's run sends a prompt
// that holds double quotes quoted again, `"say \"Hi\""`) and whitespace runs as one space.
func normPrompt(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, `\"`, `"`)), " ")
}

// assistantReplies counts the model's replies in msgs: runs of consecutive assistant messages
// (a decoder may give a reply's text and its tool calls as messages of their own).
func assistantReplies(msgs []chat.Message) int {
	n := 0
	prev := false
	for _, m := range msgs {
		is := m.Role == chat.RoleAssistant
		if is && !prev {
			n++
		}
		prev = is
	}
	return n
}

// systemPrefix returns the first 256 bytes of the longest of the request's leading system
// messages: a session's own prompt, also when the client sends a short block before it that
// changes (Claude Code's billing header), and not a title or memory request's.
func systemPrefix(msgs []chat.Message) string {
	var t string
	for _, m := range msgs {
		if m.Role != chat.RoleSystem && m.Role != chat.RoleDeveloper {
			break
		}
		if len(m.Content) > len(t) {
			t = m.Content
		}
	}
	if len(t) > 256 {
		t = t[:256]
	}
	return t
}

// render asks the upstream for its rendering of c ([ollama.Client.Render]); a model without
// thinking is rendered as Ollama's compatible endpoints serve it, with `think` unset.
func (s *Server) render(ctx context.Context, c *api.ChatRequest) (string, error) {
	rendered, err := s.renderer.Render(ctx, c)
	if err != nil && c.Think != nil && strings.Contains(err.Error(), "does not support thinking") {
		c.Think = nil
		rendered, err = s.renderer.Render(ctx, c)
	}
	if err != nil {
		return "", fmt.Errorf("render the prompt: %w", err)
	}
	return rendered, nil
}

// prefill sends c with num_predict 1 and returns the upstream's prompt_eval_count.
func (s *Server) prefill(ctx context.Context, c *api.ChatRequest) (int, error) {
	r := *c
	r.Options = map[string]any{}
	for k, v := range c.Options {
		r.Options[k] = v
	}
	r.Options["num_predict"] = 1
	stream := false
	r.Stream = &stream
	var final api.ChatResponse
	err := s.client.Chat(ctx, &r, func(resp api.ChatResponse) error {
		if resp.Done {
			final = resp
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prefill: %w", err)
	}
	if !final.Done {
		return 0, errors.New("prefill: the upstream's answer has no done message")
	}
	return final.PromptEvalCount, nil
}

// fill sends text as a raw prompt (no template), which leaves the server's cache holding it.
func (s *Server) fill(ctx context.Context, c *api.ChatRequest, text string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stream := false
	opts := map[string]any{"num_predict": 1, "temperature": 0}
	if v, ok := c.Options["num_ctx"]; ok {
		opts["num_ctx"] = v
	}
	g := &api.GenerateRequest{Model: c.Model, Prompt: text, Raw: true, Stream: &stream, Options: opts, KeepAlive: c.KeepAlive}
	return s.client.Generate(ctx, g, func(api.GenerateResponse) error { return nil })
}
