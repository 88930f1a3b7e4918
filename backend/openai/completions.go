package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/chat"
	"lab/internal/wire"
)

// chunk is one Chat Completions stream chunk, or (with Message) an unstreamed response, as the
// lab reads it: the delta fields that make a first token, usage with every count optional, and
// llama-server's timings.
type chunk struct {
	Choices []struct {
		Index        int     `json:"index"`
		Delta        *delta  `json:"delta"`
		Message      *delta  `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usageCounts `json:"usage"`
	Timings *Timings     `json:"timings"`
}

// delta is a stream delta or a response message: content, reasoning under either name
// (reasoning_content: llama-server, SGLang, DeepSeek; reasoning: vLLM, OpenRouter, Ollama) and
// tool calls.
type delta struct {
	Content          *string           `json:"content"`
	ReasoningContent *string           `json:"reasoning_content"`
	Reasoning        *string           `json:"reasoning"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
}

// first reports whether d carries a generated token: content, reasoning or a tool call.
func (d *delta) first() bool {
	if d == nil {
		return false
	}
	return (d.Content != nil && *d.Content != "") || (d.ReasoningContent != nil && *d.ReasoningContent != "") ||
		(d.Reasoning != nil && *d.Reasoning != "") || len(d.ToolCalls) > 0
}

// chatFields are the fields of a Chat Completions body, in the order sent: model, messages,
// stream, the base fields ([Client.baseFields]), stream_options; Options.Extra replaces a field
// of the same name in place or is appended.
func (c *Client) chatFields(req *chat.Request) ([]field, []string, error) {
	o := EncodeOptions{ReasoningField: c.profile.Reasoning, ReasoningOnToolCalls: c.profile.ReasoningOnToolCalls}
	msgs, err := EncodeMessagesWith(req.Messages, o)
	if err != nil {
		return nil, nil, err
	}
	var warn []string
	if o.ReasoningField == "" {
		if n := countReasoning(req.Messages); n > 0 {
			warn = append(warn, fmt.Sprintf("profile %s takes no reasoning back: the reasoning of %d assistant message(s) was not sent", c.profile.Name, n))
		}
	}
	model, err := wire.Marshal(c.model)
	if err != nil {
		return nil, nil, err
	}
	set := []field{{"model", model}, {"messages", msgs}, {"stream", json.RawMessage(strconv.FormatBool(!c.opts.NoStream))}}
	rest, err := c.baseFields(req, false, c.profile.MaxTokensField, true)
	if err != nil {
		return nil, nil, err
	}
	set = append(set, rest...)
	if !c.opts.NoStream {
		set = append(set, field{"stream_options", json.RawMessage(`{"include_usage":true}`)})
	}
	return c.withExtra(set), warn, nil
}

func countReasoning(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == chat.RoleAssistant && m.Reasoning != "" {
			n++
		}
	}
	return n
}

// sendChat sends req to {base}/chat/completions and reads the answer.
func (c *Client) sendChat(ctx context.Context, req *chat.Request) (*chat.Result, error) {
	e, res, start, err := c.open(ctx, req, "/chat/completions", c.chatFields, !c.opts.NoStream)
	if err != nil {
		return res, err
	}
	defer e.answer.Close()
	if c.opts.NoStream {
		b, err := chat.ReadAllMax(e.answer, e.wire())
		res.Total = time.Since(start)
		if errors.Is(err, chat.ErrWireTooLong) {
			return res, chat.ReplyTooLongError("openai", c.base.String(), e.limit)
		}
		if err != nil {
			return res, c.apiError(wire.ReadError{Err: err}, 0)
		}
		if f := chat.SniffAnswer(e.answerType, b); f == chat.AnswerEmpty || f == chat.AnswerOther {
			return res, chat.NotAnswerError("openai", c.base.String(), e.answerType, b)
		}
		// The proxy's accumulator, as for a stream: an error object is the server's message, a
		// body without a choices array not the API's answer.
		var cc ChatCapture
		cc.gen.count.Limit = e.limit
		if err := cc.Whole(b); err != nil {
			return res, c.answerError(err, e)
		}
		res.Warnings = append(res.Warnings, "unstreamed request (NoStream): time to first token unknown")
		fillUsage(res, cc.usage, cc.tim, c.profile, &c.seenDetails)
		if cc.gen.count.Over() {
			return res, cc.gen.count.Err("openai", c.base.Redacted())
		}
		if req.Generate > 0 {
			res.Reply = cc.gen.reply(res)
		}
		return res, nil
	}

	var (
		cc         ChatCapture
		firstChunk time.Duration
	)
	cc.gen.count.Limit = e.limit
	if req.Generate > 0 {
		// What the model wrote, also when the stream breaks off: a timeout keeps what came.
		defer func() { res.Reply = cc.gen.reply(res) }()
	}
	_, err = c.readAnswer(e, func(name string, data []byte) error {
		now := time.Since(start)
		if name == "error" { // llama-server's older in-stream error line
			return &chat.APIError{Backend: "openai", Body: "error in the stream: " + errorText(data)}
		}
		choices, content, err := cc.chunk(data)
		if firstChunk == 0 && choices {
			firstChunk = now
		}
		if res.TTFT == 0 && content {
			res.TTFT = now
		}
		if err == nil && cc.gen.count.Over() {
			// Stop reading: the deferred Close drops the connection.
			return cc.gen.count.Err("openai", c.base.Redacted())
		}
		return err
	}, func(body []byte) error {
		if err := cc.Whole(body); err != nil {
			return err
		}
		if cc.gen.count.Over() {
			return cc.gen.count.Err("openai", c.base.Redacted())
		}
		res.Warnings = append(res.Warnings, "the server answered the streamed request with one JSON answer, not a stream: time to first token unknown")
		return nil
	})
	res.Total = time.Since(start)
	if err == nil {
		err = cc.End()
	}
	if err != nil {
		return res, c.answerError(err, e)
	}
	if res.TTFT == 0 && !cc.whole {
		res.TTFT = firstChunk
		res.Warnings = append(res.Warnings, "no chunk carried content, reasoning or a tool call: time to first token is the time to the first chunk with a choice")
	}
	fillUsage(res, cc.usage, cc.tim, c.profile, &c.seenDetails)
	return res, nil
}

// toolCallDelta is one tool call of a response message, or a fragment of one in a stream delta:
// OpenAI streams a call by `index`, its id and name in the first fragment, its arguments in
// pieces after (https://platform.openai.com/docs/guides/function-calling, "Streaming").
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// generation puts together what the model wrote from the chunks of a Chat Completions stream
// (or from an unstreamed response's message): its reasoning, its text and its tool calls, joined
// by the calls' index. Only the first choice (index 0) is read: the lab asks for one.
type generation struct {
	content, reasoning strings.Builder
	calls              map[int]*chat.ToolCall
	args               map[int]*strings.Builder
	// names are the calls' names as they grow (a name sent in fragments), set on calls by reply.
	names  map[int]*strings.Builder
	finish string
	// last is the index of the call the last fragment went to.
	last int
	// count counts the reply's bytes (text, reasoning, tool calls' names and arguments)
	// against the request's reply limit.
	count chat.ReplyCounter
	// maxIdx is the largest call index seen.
	maxIdx int
}

// add takes one chunk. A tool call fragment that is not the expected object is skipped. A
// fragment without `index` goes to the call of the fragment before it, unless it carries an id
// that call does not have or follows another call in the same delta: then it starts the next
// call.
func (g *generation) add(ck *chunk) {
	for _, ch := range ck.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			g.finish = *ch.FinishReason
		}
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d == nil {
			continue
		}
		if d.Content != nil {
			g.count.Add(len(*d.Content))
			g.content.WriteString(*d.Content)
		}
		// A server in the middle of renaming the field may send both with the same text:
		// reasoning_content wins.
		switch {
		case d.ReasoningContent != nil && *d.ReasoningContent != "":
			g.count.Add(len(*d.ReasoningContent))
			g.reasoning.WriteString(*d.ReasoningContent)
		case d.Reasoning != nil:
			g.count.Add(len(*d.Reasoning))
			g.reasoning.WriteString(*d.Reasoning)
		}
		for i, raw := range d.ToolCalls {
			var tc toolCallDelta
			if json.Unmarshal(raw, &tc) != nil {
				continue
			}
			if g.calls == nil {
				g.calls, g.args, g.names = map[int]*chat.ToolCall{}, map[int]*strings.Builder{}, map[int]*strings.Builder{}
			}
			var idx int
			switch {
			case tc.Index != nil:
				idx = *tc.Index
			case len(g.calls) == 0:
			case i > 0:
				// No index, and not the delta's first call: a call of its own.
				idx = g.maxIdx + 1
			default:
				// No index (Gemini's OpenAI-compatible endpoint): a fragment with an id the
				// last call does not have starts a new call; one without continues the last.
				idx = g.last
				if prev := g.calls[g.last]; tc.ID != "" && prev.ID != "" && tc.ID != prev.ID {
					idx = g.maxIdx + 1
				}
			}
			g.last = idx
			if len(g.calls) == 0 || idx > g.maxIdx {
				g.maxIdx = idx
			}
			call, ok := g.calls[idx]
			if !ok {
				call = &chat.ToolCall{}
				g.calls[idx], g.args[idx], g.names[idx] = call, &strings.Builder{}, &strings.Builder{}
				if !g.count.AddPiece() {
					return // past the limit: the rest of the chunk is not held
				}
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			// The name comes whole in the first fragment; some servers repeat it in later ones.
			if n := tc.Function.Name; n != "" && n != g.names[idx].String() {
				g.count.Add(len(n))
				g.names[idx].WriteString(n)
			}
			g.count.Add(len(tc.Function.Arguments))
			g.args[idx].WriteString(tc.Function.Arguments)
		}
	}
}

// reply returns what the model wrote, its tool calls in index order. A generation cut at the
// token limit (finish_reason "length") keeps what was parsed, less the tool calls whose
// arguments it cut before they were whole JSON (a warning on res names them).
func (g *generation) reply(res *chat.Result) *chat.Reply {
	r := &chat.Reply{Reasoning: g.reasoning.String(), Content: g.content.String()}
	for idx, call := range g.calls {
		call.Name = g.names[idx].String()
	}
	r.ToolCalls = finishCalls(g.calls, g.args, g.finish == "length", res)
	return r
}

// finishCalls returns calls in index order with their arguments (args; "{}" when empty). With
// cut, a call whose arguments are not whole JSON is dropped and a warning on res says so; so is
// a call that never got a name (it could not be sent back).
func finishCalls(calls map[int]*chat.ToolCall, args map[int]*strings.Builder, cut bool, res *chat.Result) []chat.ToolCall {
	var out []chat.ToolCall
	for _, idx := range slices.Sorted(maps.Keys(calls)) {
		tc := *calls[idx]
		a := strings.TrimSpace(args[idx].String())
		if a == "" {
			a = "{}"
		}
		if cut && !json.Valid([]byte(a)) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the generation was cut at the token limit inside tool call %d (%s): the call was dropped", idx, tc.Name))
			continue
		}
		if tc.Name == "" {
			// It could not be sent back: a tool call needs a name (EncodeMessages).
			res.Warnings = append(res.Warnings, fmt.Sprintf("tool call %d has no name: the call was dropped", idx))
			continue
		}
		tc.Arguments = json.RawMessage(a)
		out = append(out, tc)
	}
	return out
}
