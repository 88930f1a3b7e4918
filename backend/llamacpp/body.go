package llamacpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

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
	// msgs are the last request's messages and their encodings.
	msgs wire.MessagePieces
	// tools and toolsEnc are the last tool list and its `,"tools":[…]` ("" for none).
	tools    []chat.Tool
	toolsEnc []byte
	// tail and tailKey are the fields after the tool list, and what they were built from.
	tail    []byte
	tailKey tailKey
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
	return a.Role == b.Role && wire.SameString(a.Content, b.Content) && wire.SameString(a.Reasoning, b.Reasoning) &&
		a.ToolCallID == b.ToolCallID && wire.SameCalls(a.ToolCalls, b.ToolCalls)
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
	err := bc.msgs.Update(req.Messages, sameMessage, func(dst []byte, i int, m *chat.Message) ([]byte, error) {
		return openai.AppendMessage(dst, i, *m, o)
	})
	if err != nil {
		return wire.Body{}, fmt.Errorf("llamacpp: %w", err)
	}
	bc.msgs.AppendTo(&body)
	body.Append([]byte{']'})
	if !wire.SameTools(bc.tools, req.Tools) {
		enc, err := c.encodeTools(req.Tools)
		if err != nil {
			return wire.Body{}, err
		}
		bc.tools, bc.toolsEnc = wire.CloneTools(req.Tools), enc
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
