package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"lab/chat"
	"lab/internal/wire"
)

// Reasoning items of the Responses API in chat.Message (a proposal: chat has no field of its
// own for them yet). An assistant message's encrypted reasoning item travels as one
// chat.ThinkingBlock in Message.Thinking with Redacted true, Data the item's
// `encrypted_content`, Signature its `id` ("rs_…") and Text its summary text ("" for none) —
// the Anthropic redacted_thinking shape, which is also opaque bytes to be passed back
// unchanged. [ReasoningBlock] builds one. The Chat Completions dialect ignores them.

// ReasoningBlock returns the chat.ThinkingBlock that carries one Responses API reasoning item:
// id is the item's `id`, encrypted its `encrypted_content`, summary its summary text.
func ReasoningBlock(id, encrypted, summary string) chat.ThinkingBlock {
	return chat.ThinkingBlock{Redacted: true, Data: encrypted, Signature: id, Text: summary}
}

// EncodeInput returns the Responses API `input` array for msgs, in order, as JSON (HTML
// characters not escaped):
//
//   - system and user messages: {"type": "message", "role", "content"};
//   - an assistant message: first its reasoning items (Thinking blocks with Redacted and Data,
//     see [ReasoningBlock]) as {"type": "reasoning", "id", "summary", "encrypted_content"},
//     then its text as {"type": "message", "role": "assistant", "content"} when not empty,
//     then each tool call as {"type": "function_call", "call_id", "name", "arguments"} — a
//     reasoning item is thus always followed by the item it led to, which the API requires;
//   - a tool message: {"type": "function_call_output", "call_id", "output"}.
//
// Plain reasoning text (Message.Reasoning) cannot go back: the API takes reasoning only as the
// encrypted items it produced. dropped counts the assistant messages whose Reasoning was not
// sent for that reason. Errors as for [EncodeMessages].
func EncodeInput(msgs []chat.Message) (input []byte, dropped int, err error) {
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	item := func() {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
	}
	message := func(role, content string) {
		item()
		b.WriteString(`{"type":"message","role":`)
		writeString(&b, role)
		b.WriteString(`,"content":`)
		writeString(&b, content)
		b.WriteByte('}')
	}
	for i, m := range msgs {
		switch m.Role {
		case chat.RoleSystem, chat.RoleUser:
			message(string(m.Role), m.Content)
		case chat.RoleAssistant:
			sent := false
			for _, t := range m.Thinking {
				if !t.Redacted || t.Data == "" {
					continue
				}
				item()
				b.WriteString(`{"type":"reasoning",`)
				if t.Signature != "" {
					b.WriteString(`"id":`)
					writeString(&b, t.Signature)
					b.WriteByte(',')
				}
				b.WriteString(`"summary":[`)
				if t.Text != "" {
					b.WriteString(`{"type":"summary_text","text":`)
					writeString(&b, t.Text)
					b.WriteByte('}')
				}
				b.WriteString(`],"encrypted_content":`)
				writeString(&b, t.Data)
				b.WriteByte('}')
				sent = true
			}
			if m.Reasoning != "" && !sent {
				dropped++
			}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				message("assistant", m.Content)
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, 0, fmt.Errorf("openai: message %d: a tool call needs an id and a name", i)
				}
				item()
				b.WriteString(`{"type":"function_call","call_id":`)
				writeString(&b, tc.ID)
				b.WriteString(`,"name":`)
				writeString(&b, tc.Name)
				b.WriteString(`,"arguments":`)
				writeString(&b, arguments(tc.Arguments))
				b.WriteByte('}')
			}
		case chat.RoleTool:
			if m.ToolCallID == "" {
				return nil, 0, fmt.Errorf("openai: message %d: a tool message needs the tool_call_id of the call it answers", i)
			}
			item()
			b.WriteString(`{"type":"function_call_output","call_id":`)
			writeString(&b, m.ToolCallID)
			b.WriteString(`,"output":`)
			writeString(&b, m.Content)
			b.WriteByte('}')
		default:
			return nil, 0, fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
		}
	}
	b.WriteByte(']')
	return b.Bytes(), dropped, nil
}

// responseEvent is one Responses API stream event as the lab reads it
// (https://platform.openai.com/docs/api-reference/responses-streaming): its type, the output
// item it concerns (output_index, and the item itself in response.output_item.added and .done),
// the part of that item (summary_index, content_index), a delta, and for the final events the
// response with its usage and output.
type responseEvent struct {
	Type         string        `json:"type"`
	Delta        string        `json:"delta"`
	Message      string        `json:"message"`
	Code         string        `json:"code"`
	OutputIndex  int           `json:"output_index"`
	SummaryIndex int           `json:"summary_index"`
	ContentIndex int           `json:"content_index"`
	Item         *responseItem `json:"item"`
	Response     *struct {
		Status string          `json:"status"`
		Output []*responseItem `json:"output"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *responseUsage `json:"usage"`
	} `json:"response"`
}

// responseUsage is the Responses API's usage, every count optional.
type responseUsage struct {
	InputTokens        *int64 `json:"input_tokens"`
	OutputTokens       *int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     *int64 `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// firstToken reports whether a stream event of type t carries a generated token.
func firstToken(t string) bool {
	switch t {
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
		"response.reasoning_summary_text.delta", "response.function_call_arguments.delta":
		return true
	}
	return false
}

// responsesFields are the fields of a Responses API body, in the order sent: input, model,
// stream true, tools, max_output_tokens, prompt_cache_key, store false, and, when req.Think,
// the encrypted reasoning include (non-reasoning models refuse it); Options.Extra replaces a
// field of the same name in place or is appended.
func (c *Client) responsesFields(req *chat.Request) ([]field, []string, error) {
	input, dropped, err := EncodeInput(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	var warn []string
	if dropped > 0 {
		warn = append(warn, fmt.Sprintf("Responses API: the reasoning text of %d assistant message(s) was not sent (it takes back only encrypted reasoning items)", dropped))
	}
	model, err := wire.Marshal(c.model)
	if err != nil {
		return nil, nil, err
	}
	set := []field{{"input", input}, {"model", model}, {"stream", json.RawMessage(`true`)}}
	rest, err := c.baseFields(req, true, "max_output_tokens", false)
	if err != nil {
		return nil, nil, err
	}
	set = append(set, rest...)
	set = append(set, field{"store", json.RawMessage(`false`)})
	if req.Think {
		set = append(set, field{"include", json.RawMessage(`["reasoning.encrypted_content"]`)})
	}
	return c.withExtra(set), warn, nil
}

// sendResponses sends req to {base}/responses, streamed, and reads usage from the
// response.completed (or response.incomplete) event.
func (c *Client) sendResponses(ctx context.Context, req *chat.Request) (*chat.Result, error) {
	e, res, start, err := c.open(ctx, req, "/responses", c.responsesFields, true)
	if err != nil {
		return res, err
	}
	defer e.answer.Close()
	var rc ResponsesCapture
	if req.Generate > 0 {
		// What the model wrote, also when the stream breaks off: a timeout keeps what came.
		defer func() { res.Reply = rc.out.reply(res) }()
	}
	rc.out.count.Limit = e.limit
	stop := func() error {
		if rc.out.count.Over() {
			// Stop reading: the deferred Close drops the connection.
			return rc.out.count.Err("openai", c.base.Redacted())
		}
		return nil
	}
	_, err = c.readAnswer(e, func(_ string, data []byte) error {
		now := time.Since(start)
		content, err := rc.event(data, stop)
		if res.TTFT == 0 && content {
			res.TTFT = now
		}
		return err
	}, func(body []byte) error {
		// A response object, as the unstreamed API answers.
		return rc.wholeBody(body, stop, func() {
			res.Warnings = append(res.Warnings, "the server answered the streamed request with one JSON response object, not a stream: time to first token unknown")
		})
	})
	res.Warnings = append(res.Warnings, rc.warnings...)
	res.Total = time.Since(start)
	if err == nil {
		if rc.out.size() > e.limit {
			// Items sent whole (output_item.done, the final response's output) past the limit.
			err = chat.ReplyTooLongError("openai", "", e.limit)
		} else {
			err = rc.End()
		}
	}
	if err != nil {
		return res, c.answerError(err, e)
	}
	if res.TTFT == 0 && !rc.whole {
		res.Warnings = append(res.Warnings, "no event carried output text, reasoning or a tool call: time to first token unknown")
	}
	rc.fill(res)
	return res, nil
}

// normalise returns the Responses API's usage as the lab's record, each count with its wire
// field (input_tokens, output_tokens and their details), the uncached part derived.
func (u *responseUsage) normalise() *chat.Usage {
	us := &chat.Usage{Fields: map[chat.UsageField]string{}}
	us.Set(chat.UsagePrompt, "response.usage.input_tokens", u.InputTokens)
	us.Set(chat.UsageGenerated, "response.usage.output_tokens", u.OutputTokens)
	if d := u.InputTokensDetails; d != nil {
		us.Set(chat.UsageCachedRead, "response.usage.input_tokens_details.cached_tokens", d.CachedTokens)
		us.Set(chat.UsageCacheWrite, "response.usage.input_tokens_details.cache_write_tokens", d.CacheWriteTokens)
	}
	if d := u.OutputTokensDetails; d != nil {
		us.Set(chat.UsageReasoningGenerated, "response.usage.output_tokens_details.reasoning_tokens", d.ReasoningTokens)
	}
	deriveUncached(us)
	return us
}

func joinNonEmpty(code, msg string) string {
	switch {
	case code == "":
		return msg
	case msg == "":
		return code
	}
	return code + ": " + msg
}

// responseItem is one output item of a Responses API answer: a reasoning item (id "rs_…",
// summary parts, content parts of type reasoning_text, encrypted_content when the request
// included reasoning.encrypted_content), a message (content parts of type output_text or
// refusal) or a function_call (call_id, name, arguments as a JSON string).
type responseItem struct {
	Type             string     `json:"type"`
	ID               string     `json:"id"`
	CallID           string     `json:"call_id"`
	Name             string     `json:"name"`
	Arguments        string     `json:"arguments"`
	EncryptedContent string     `json:"encrypted_content"`
	Summary          []itemPart `json:"summary"`
	Content          []itemPart `json:"content"`
	Status           string     `json:"status"`
}

// itemPart is a summary or content part of an output item.
type itemPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// output puts together the output items of a Responses API stream: each item from
// response.output_item.added, grown by the deltas (output_text, reasoning_summary_text,
// reasoning_text, function_call_arguments), replaced whole by response.output_item.done and,
// when the final event carries it, by the response's output.
type output struct {
	items map[int]*responseItem
	// cut is set by a response.incomplete for max_output_tokens.
	cut bool
	// grown holds the deltas of each part (and each call's arguments) since its item was last
	// set whole, appended to the item by flush: a part grows in linear time however many deltas
	// it comes in.
	grown map[partKey]*strings.Builder
	// count counts the bytes the items hold (whole items as they are set, deltas as they come)
	// and the items ([chat.PieceCost] each) against the request's reply limit; sizes holds each
	// item's share of count.N, taken back when the item is set whole again.
	count chat.ReplyCounter
	sizes map[int]int64
}

// partKey names what a delta grows: output item, which list (content, summary, or args for a
// function call's arguments) and the part's index in it.
type partKey struct {
	item int
	list string
	idx  int
}

// grow appends delta to what k names, counting it.
func (o *output) grow(k partKey, delta string) {
	if o.grown == nil {
		o.grown = map[partKey]*strings.Builder{}
	}
	b := o.grown[k]
	if b == nil {
		b = &strings.Builder{}
		o.grown[k] = b
	}
	o.count.Add(len(delta))
	o.sizes[k.item] += int64(len(delta))
	b.WriteString(delta)
}

// set puts it whole at output index i, counting its bytes in place of what the item at i held
// before ([itemSize]).
func (o *output) set(i int, it *responseItem) {
	*o.item(i, "") = *it
	o.count.N -= o.sizes[i]
	o.sizes[i] = itemSize(it)
	o.count.N += o.sizes[i]
}

// itemSize returns the bytes of the reply an item holds: its name, arguments, encrypted
// reasoning (encrypted_content, sent back as a Thinking block) and its parts' texts.
func itemSize(it *responseItem) int64 {
	n := int64(len(it.Name) + len(it.Arguments) + len(it.EncryptedContent))
	for _, p := range it.Content {
		n += int64(len(p.Text))
	}
	for _, p := range it.Summary {
		n += int64(len(p.Text))
	}
	return n
}

// drop forgets the deltas of output item i (set whole again), or of every item for i < 0.
func (o *output) drop(i int) {
	for k := range o.grown {
		if i < 0 || k.item == i {
			delete(o.grown, k)
		}
	}
}

// flush appends the deltas held in grown to their items and empties it.
func (o *output) flush() {
	for k, b := range o.grown {
		it := o.items[k.item]
		if it == nil {
			continue
		}
		switch k.list {
		case "content":
			part(&it.Content, k.idx, "").Text += b.String()
		case "summary":
			part(&it.Summary, k.idx, "").Text += b.String()
		case "args":
			it.Arguments += b.String()
		}
	}
	o.grown = nil
}

// size returns the bytes of the reply the items hold ([itemSize]).
func (o *output) size() int64 {
	o.flush()
	var n int64
	for _, it := range o.items {
		n += itemSize(it)
	}
	return n
}

// item returns the output item at index i, of type typ when the stream did not announce it
// (response.output_item.added).
func (o *output) item(i int, typ string) *responseItem {
	if o.items == nil {
		o.items, o.sizes = map[int]*responseItem{}, map[int]int64{}
	}
	it, ok := o.items[i]
	if !ok {
		it = &responseItem{Type: typ}
		o.items[i] = it
		o.count.AddPiece()
	}
	return it
}

// part returns parts[i], growing parts as needed (an index out of reason, below 0 or above
// 1024, is the nearest end: a bad stream does not allocate without bound).
func part(parts *[]itemPart, i int, typ string) *itemPart {
	i = min(max(i, 0), 1024)
	for len(*parts) <= i {
		*parts = append(*parts, itemPart{Type: typ})
	}
	return &(*parts)[i]
}

// add takes one stream event.
func (o *output) add(ev *responseEvent) {
	switch ev.Type {
	case "response.output_item.added", "response.output_item.done":
		if ev.Item != nil {
			o.drop(ev.OutputIndex)
			o.set(ev.OutputIndex, ev.Item)
		}
	case "response.output_text.delta":
		it := o.item(ev.OutputIndex, "message")
		part(&it.Content, ev.ContentIndex, "output_text")
		o.grow(partKey{ev.OutputIndex, "content", min(max(ev.ContentIndex, 0), 1024)}, ev.Delta)
	case "response.reasoning_summary_text.delta":
		it := o.item(ev.OutputIndex, "reasoning")
		part(&it.Summary, ev.SummaryIndex, "summary_text")
		o.grow(partKey{ev.OutputIndex, "summary", min(max(ev.SummaryIndex, 0), 1024)}, ev.Delta)
	case "response.reasoning_text.delta":
		it := o.item(ev.OutputIndex, "reasoning")
		part(&it.Content, ev.ContentIndex, "reasoning_text")
		o.grow(partKey{ev.OutputIndex, "content", min(max(ev.ContentIndex, 0), 1024)}, ev.Delta)
	case "response.function_call_arguments.delta":
		o.item(ev.OutputIndex, "function_call")
		o.grow(partKey{ev.OutputIndex, "args", 0}, ev.Delta)
	case "response.completed", "response.incomplete":
		if ev.Response == nil {
			return
		}
		if d := ev.Response.IncompleteDetails; ev.Type == "response.incomplete" && d != nil && d.Reason == "max_output_tokens" {
			o.cut = true
		}
		if len(ev.Response.Output) > 0 {
			o.drop(-1)
			o.items, o.sizes = nil, nil
			o.count.N, o.count.Pieces = 0, 0
			for i, it := range ev.Response.Output {
				if it != nil {
					o.set(i, it)
				}
			}
		}
	}
}

// reply returns what the model wrote, in output order:
//
//   - a reasoning item's text (its reasoning_text content, else its summary, parts joined by a
//     blank line) goes to Reasoning, items joined by a blank line; an item with
//     encrypted_content also becomes a Thinking block ([ReasoningBlock]: id, encrypted_content,
//     summary), which [EncodeInput] sends back as the same reasoning item;
//   - a message's output_text parts go to Content;
//   - a function_call becomes a tool call (ID its call_id, Arguments its arguments, "{}" when
//     empty).
//
// A generation cut at max_output_tokens keeps what was parsed, less a function call whose
// arguments the cut left unfinished (not whole JSON; a warning on res says so).
func (o *output) reply(res *chat.Result) *chat.Reply {
	o.flush()
	r := &chat.Reply{}
	var reasoning []string
	var content strings.Builder
	for _, idx := range slices.Sorted(maps.Keys(o.items)) {
		it := o.items[idx]
		switch it.Type {
		case "reasoning":
			summary := joinParts(it.Summary, "summary_text")
			text := joinParts(it.Content, "reasoning_text")
			if text == "" {
				text = summary
			}
			if text != "" {
				reasoning = append(reasoning, text)
			}
			if it.EncryptedContent != "" {
				r.Thinking = append(r.Thinking, ReasoningBlock(it.ID, it.EncryptedContent, summary))
			}
		case "message":
			for _, p := range it.Content {
				if p.Type == "output_text" {
					content.WriteString(p.Text)
				}
			}
		case "function_call":
			args := strings.TrimSpace(it.Arguments)
			if args == "" {
				args = "{}"
			}
			if (o.cut || it.Status == "incomplete") && !json.Valid([]byte(args)) {
				res.Warnings = append(res.Warnings, fmt.Sprintf("the generation was cut at max_output_tokens inside function call %d (%s): the call was dropped", idx, it.Name))
				continue
			}
			r.ToolCalls = append(r.ToolCalls, chat.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(args)})
		}
	}
	r.Reasoning = strings.Join(reasoning, "\n\n")
	r.Content = content.String()
	return r
}

// joinParts joins the texts of the parts of type typ with a blank line.
func joinParts(parts []itemPart, typ string) string {
	var texts []string
	for _, p := range parts {
		if p.Type == typ && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}
