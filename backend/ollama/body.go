package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ollama/ollama/api"

	"lab/chat"
	"lab/internal/wire"
)

// bodyCache keeps the encodings of the last request's messages and the fields around them, so
// that the next request of the conversation encodes only what changed ([Client.RequestBodies]): a
// message at the same index with the same fields (strings that share their bytes compare at
// once) takes its encoding again. Not safe for concurrent use, as its Client.
type bodyCache struct {
	// msgs are the last request's messages and their encodings.
	msgs wire.MessagePieces
	// tools is the last request's tool list; head, chatTail and renderTail the body's bytes
	// before its messages and after them (of the measured request and of the rendering), built
	// from tools and key.
	tools                      []chat.Tool
	head, chatTail, renderTail []byte
	key                        frameKey
}

// frameKey is what the fields around the messages depend on beside the tool list.
type frameKey struct {
	built       bool
	think       bool
	generate    int
	seed        int
	temperature float64
	numCtx      int
	keepAlive   time.Duration
}

// sameMessage reports whether a and b convert alike to an api.Message: every field
// [Client.ChatRequest] reads.
func sameMessage(a, b *chat.Message) bool {
	return a.Role == b.Role && wire.SameString(a.Content, b.Content) && wire.SameString(a.Reasoning, b.Reasoning) &&
		a.ToolName == b.ToolName && a.ToolCallID == b.ToolCallID && wire.SameCalls(a.ToolCalls, b.ToolCalls)
}

// RequestBodies returns the two /api/chat bodies [Client.Measure] sends for req, as the pieces
// they are sent from (wire.Body): the measured request's, json.Marshal of [Client.ChatRequest]'s
// api.ChatRequest byte for byte (what github.com/ollama/ollama/api's Client.Chat sent, v0.17.4),
// and the rendering's, [RenderRequest] of it byte for byte (`stream` false and
// `_debug_render_only` true). Both are each message's encoding between the fields around them,
// and share the messages' pieces. A message the client encoded for the previous request at the
// same place, unchanged in every field ChatRequest reads, is not converted or encoded again, nor
// is an unchanged tool list, so that a conversation's next request costs the encoding of its new
// messages, not of the whole conversation. Errors are ChatRequest's.
func (c *Client) RequestBodies(req *chat.Request) (request, rendering wire.Body, err error) {
	bc := &c.cache
	err = bc.msgs.Update(req.Messages, sameMessage, func(dst []byte, _ int, m *chat.Message) ([]byte, error) {
		am, err := c.message(m)
		if err != nil {
			return nil, err
		}
		// json.Marshal, as the api client encodes the request: its message list's element i is
		// these bytes.
		enc, err := json.Marshal(am)
		if err != nil {
			return nil, fmt.Errorf("ollama: encode request: %w", err)
		}
		return append(dst, enc...), nil
	})
	if err != nil {
		return wire.Body{}, wire.Body{}, err
	}
	key := frameKey{built: true, think: req.Think && !c.noThinking, generate: req.Generate, seed: c.seed,
		temperature: c.temperature, numCtx: c.numCtx, keepAlive: c.keepAlive}
	if bc.key != key || !wire.SameTools(bc.tools, req.Tools) {
		if err := c.encodeFrame(req); err != nil {
			return wire.Body{}, wire.Body{}, err
		}
		bc.tools, bc.key = wire.CloneTools(req.Tools), key
	}
	build := func(tail []byte) wire.Body {
		var b wire.Body
		b.Append(bc.head)
		bc.msgs.AppendTo(&b)
		b.Append(tail)
		return b
	}
	return build(bc.chatTail), build(bc.renderTail), nil
}

// messagesKey is where json.Marshal of an api.ChatRequest with an empty message list writes it.
// A JSON string cannot hold these bytes (its quotes are escaped), so the first of them in the
// encoding is the list's.
var messagesKey = []byte(`"messages":[]`)

// encodeFrame sets the cache's head, chatTail and renderTail: json.Marshal of req's
// api.ChatRequest ([Client.ChatRequest]) and of its rendering request ([RenderRequest]) with no
// messages, cut at the empty message list, the head ending in `"messages":[` and each tail
// starting with its `]`.
func (c *Client) encodeFrame(req *chat.Request) error {
	tools, err := c.toolList(req.Tools)
	if err != nil {
		return err
	}
	r := c.chatRequest(req)
	r.Messages, r.Tools = []api.Message{}, tools
	whole, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("ollama: encode request: %w", err)
	}
	render, err := RenderRequest(r)
	if err != nil {
		return err
	}
	i, j := bytes.Index(whole, messagesKey), bytes.Index(render, messagesKey)
	if i < 0 || j != i || !bytes.Equal(whole[:i], render[:j]) {
		return fmt.Errorf("ollama: encode request: no message list where json.Marshal writes it in %s", wire.Quote(whole))
	}
	open := i + len(messagesKey) - 1 // after `"messages":[`
	bc := &c.cache
	bc.head, bc.chatTail, bc.renderTail = whole[:open], whole[open:], render[open:]
	return nil
}
