package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/ollama/ollama/api"

	"lab/chat"
	"lab/internal/wire"
)

// bodyCache keeps the encodings of the last request's messages and the fields around them, so
// that the next request of the conversation encodes only what changed ([Client.RequestBodies]): a
// message at the same index with the same fields (strings that share their bytes compare at
// once) takes its encoding again. Not safe for concurrent use, as its Client.
type bodyCache struct {
	// msgs[i] is message i of the last request and its encoding, a comma first for i > 0.
	msgs []encodedMessage
	// parts[i] is msgs[i]'s encoding and ends[i] the bytes of parts[:i+1]: the messages of the
	// bodies handed out, which share this array up to their own length (handed at most), so
	// that a longer request appends to it; a change before handed copies it first.
	parts  [][]byte
	ends   []int
	handed int
	// tools is the last request's tool list; head, chatTail and renderTail the body's bytes
	// before its messages and after them (of the measured request and of the rendering), built
	// from tools and key.
	tools                      []chat.Tool
	head, chatTail, renderTail []byte
	key                        frameKey
}

type encodedMessage struct {
	m   chat.Message
	enc []byte
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
	if a.Role != b.Role || !sameString(a.Content, b.Content) || !sameString(a.Reasoning, b.Reasoning) ||
		a.ToolName != b.ToolName || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
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
	// from is the first message whose piece is not the one parts holds at its place.
	from := min(len(req.Messages), len(bc.parts))
	for i := range req.Messages {
		m := &req.Messages[i]
		if i < len(bc.msgs) && sameMessage(&bc.msgs[i].m, m) {
			continue
		}
		am, err := c.message(m)
		var enc []byte
		if err == nil {
			// json.Marshal, as the api client encodes the request: its message list's element i
			// is these bytes.
			if enc, err = json.Marshal(am); err != nil {
				err = fmt.Errorf("ollama: encode request: %w", err)
			}
		}
		if err != nil {
			// The messages before i may hold encodings parts does not: start again.
			*bc = bodyCache{}
			return wire.Body{}, wire.Body{}, err
		}
		if i > 0 {
			enc = append(append(make([]byte, 0, len(enc)+1), ','), enc...)
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
	key := frameKey{built: true, think: req.Think && !c.noThinking, generate: req.Generate, seed: c.seed,
		temperature: c.temperature, numCtx: c.numCtx, keepAlive: c.keepAlive}
	if bc.key != key || !sameTools(bc.tools, req.Tools) {
		if err := c.encodeFrame(req); err != nil {
			return wire.Body{}, wire.Body{}, err
		}
		bc.tools, bc.key = slices.Clone(req.Tools), key
	}
	n := len(req.Messages)
	if n > 0 {
		bc.handed = max(bc.handed, n)
	}
	build := func(tail []byte) wire.Body {
		var b wire.Body
		b.Append(bc.head)
		if n > 0 {
			b.AppendList(bc.parts[:n:n], bc.ends[n-1])
		}
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
