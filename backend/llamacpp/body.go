package llamacpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"lab/backend/openai"
	"lab/chat"
	"lab/internal/wire"
)

// bodyCache keeps the encodings of the last request's messages and tool list, so that the next
// request of the conversation encodes only what changed ([Client.RequestBody]): a message at the
// same index with the same fields (strings that share their bytes compare at once) takes its
// encoding again. It is the one piece of a Client several goroutines may share (the sim's
// sessions at once), hence its lock.
type bodyCache struct {
	mu sync.Mutex
	// msgs[i] is message i of the last request and its encoding, a comma first for i > 0.
	msgs []encodedMessage
	// parts[i] is msgs[i]'s encoding and ends[i] the bytes of parts[:i+1]: the messages of the
	// bodies handed out, which share this array up to their own length (handed at most), so
	// that a longer request appends to it; a change before handed copies it first.
	parts  [][]byte
	ends   []int
	handed int
	// tools and toolsEnc are the last tool list and its `,"tools":[…]` ("" for none).
	tools    []chat.Tool
	toolsEnc []byte
	// tail and tailKey are the fields after the tool list, and what they were built from.
	tail    []byte
	tailKey tailKey
}

type encodedMessage struct {
	m   chat.Message
	enc []byte
}

// tailKey is what the fields after the tool list depend on.
type tailKey struct {
	built       bool
	think       bool
	generate    int
	seed        int64
	temperature float64
}

// sameMessage reports whether a and b encode alike in the Chat Completions dialect: every field
// [openai.AppendMessage] reads.
func sameMessage(a, b *chat.Message) bool {
	if a.Role != b.Role || !sameString(a.Content, b.Content) || !sameString(a.Reasoning, b.Reasoning) || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Name != y.Name || !bytes.Equal(x.Arguments, y.Arguments) {
			return false
		}
	}
	return true
}

// sameString is a == b, at once for two strings that share their bytes (a conversation's
// messages from request to request), without a call.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func sameTools(a, b []chat.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

// RequestBody returns [Client.ChatBody]'s body for req, byte for byte, as the pieces it is sent
// from (wire.Body): each message's encoding, the tool list's and the fields around them. A
// message, or the tool list, the client encoded for the previous request at the same place,
// unchanged, is not encoded again, so that a conversation's next request costs the encoding of
// its new messages, not of the whole conversation. Errors are ChatBody's.
func (c *Client) RequestBody(req *chat.Request) (wire.Body, error) {
	bc := &c.cache
	bc.mu.Lock()
	defer bc.mu.Unlock()
	var body wire.Body
	head := []byte(`{"messages":[`)
	if c.opts.Model != "" {
		model, err := marshal(c.opts.Model)
		if err != nil {
			return wire.Body{}, err
		}
		head = append(append(append([]byte(`{"model":`), model...), ','), `"messages":[`...)
	}
	body.Append(head)
	o := openai.EncodeOptions{ReasoningField: openai.FieldReasoningContent}
	// from is the first message whose piece is not the one parts holds at its place.
	from := min(len(req.Messages), len(bc.parts))
	for i := range req.Messages {
		m := &req.Messages[i]
		if i < len(bc.msgs) && sameMessage(&bc.msgs[i].m, m) {
			continue
		}
		enc := make([]byte, 0, len(m.Content)+len(m.Reasoning)+len(m.Content)/8+96)
		if i > 0 {
			enc = append(enc, ',')
		}
		enc, err := openai.AppendMessage(enc, i, *m, o)
		if err != nil {
			// The messages kept so far may already hold encodings that parts does not: drop
			// them all, so that the next request encodes every message again. Bodies handed
			// out keep their own arrays.
			bc.msgs, bc.parts, bc.ends, bc.handed = nil, nil, nil, 0
			return wire.Body{}, fmt.Errorf("llamacpp: %w", err)
		}
		// The message is kept with its own copy of its calls: a caller that changed them in
		// place later would otherwise change what the next request is compared with.
		kept := *m
		kept.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range kept.ToolCalls {
			kept.ToolCalls[j].Arguments = slices.Clone(kept.ToolCalls[j].Arguments)
		}
		e := encodedMessage{m: kept, enc: enc}
		if i < len(bc.msgs) {
			bc.msgs[i] = e
		} else {
			bc.msgs = append(bc.msgs, e)
		}
		from = min(from, i)
	}
	bc.msgs = bc.msgs[:len(req.Messages)]
	if from < len(bc.parts) {
		if from < bc.handed {
			// Bodies handed out hold parts[:handed]: the pieces from `from` on go in a new array.
			bc.parts = append(make([][]byte, 0, len(req.Messages)+len(req.Messages)/2+8), bc.parts[:from]...)
			bc.ends = append(make([]int, 0, cap(bc.parts)), bc.ends[:from]...)
			bc.handed = 0
		}
		bc.parts, bc.ends = bc.parts[:from], bc.ends[:from]
	}
	for i := from; i < len(req.Messages); i++ {
		end := len(bc.msgs[i].enc)
		if i > 0 {
			end += bc.ends[i-1]
		}
		bc.parts, bc.ends = append(bc.parts, bc.msgs[i].enc), append(bc.ends, end)
	}
	if n := len(req.Messages); n > 0 {
		body.AppendList(bc.parts[:n:n], bc.ends[n-1])
		bc.handed = max(bc.handed, n)
	}
	body.Append([]byte{']'})
	if !sameTools(bc.tools, req.Tools) {
		enc, err := c.encodeTools(req.Tools)
		if err != nil {
			return wire.Body{}, err
		}
		// Kept with their own parameters: a caller that changed them in place later would
		// otherwise change what the next request is compared with.
		kept := slices.Clone(req.Tools)
		for j := range kept {
			kept[j].Parameters = slices.Clone(kept[j].Parameters)
		}
		bc.tools, bc.toolsEnc = kept, enc
	}
	if len(bc.toolsEnc) > 0 {
		body.Append(bc.toolsEnc)
	}
	key := tailKey{built: true, think: req.Think, generate: req.Generate}
	if req.Generate > 0 {
		key.seed, key.temperature = c.seed, c.temperature
	}
	if bc.tailKey != key {
		tail, err := c.encodeTail(req)
		if err != nil {
			return wire.Body{}, err
		}
		bc.tail, bc.tailKey = tail, key
	}
	body.Append(bc.tail)
	return body, nil
}

// encodeTools is `,"tools":[…]` as [Client.ChatBody] writes the tool list (nil for none): each
// tool a function, its parameters compacted and left out when empty, its description when empty.
func (c *Client) encodeTools(tools []chat.Tool) ([]byte, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	list := make([]tool, 0, len(tools))
	for _, t := range tools {
		params := bytes.TrimSpace(t.Parameters)
		if len(params) > 0 && !json.Valid(params) {
			return nil, fmt.Errorf("llamacpp: tool %s: parameters are not JSON", t.Name)
		}
		list = append(list, tool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	enc, err := marshal(list)
	if err != nil {
		return nil, err
	}
	return append([]byte(`,"tools":`), enc...), nil
}

// tailBody is the fields of [chatBody] after its tool list, in its order.
type tailBody struct {
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	Stream             bool           `json:"stream"`
	StreamOptions      *streamOptions `json:"stream_options,omitempty"`
	MaxTokens          int            `json:"max_tokens"`
	Temperature        float64        `json:"temperature"`
	Seed               *int64         `json:"seed,omitempty"`
	CachePrompt        bool           `json:"cache_prompt"`
	IDSlot             int            `json:"id_slot"`
}

// encodeTail is the fields after the tool list as [Client.ChatBody] writes them, with a comma
// first and the body's closing brace.
func (c *Client) encodeTail(req *chat.Request) ([]byte, error) {
	b, err := c.chatBody(&chat.Request{Think: req.Think, Generate: req.Generate})
	if err != nil {
		return nil, err
	}
	enc, err := marshal(tailBody{ChatTemplateKwargs: b.ChatTemplateKwargs, Stream: b.Stream, StreamOptions: b.StreamOptions,
		MaxTokens: b.MaxTokens, Temperature: b.Temperature, Seed: b.Seed, CachePrompt: b.CachePrompt, IDSlot: b.IDSlot})
	if err != nil {
		return nil, err
	}
	enc[0] = ','
	return enc, nil
}
