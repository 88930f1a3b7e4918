package wire

import (
	"bytes"
	"slices"
	"unsafe"

	"lab/chat"
)

// MessagePieces keeps the JSON encodings of a conversation's messages from one request to the
// next, as the pieces of a backend's request [Body], so that a request costs the encoding of the
// messages that changed, not of the whole conversation: message i of a request takes the
// encoding kept for message i of the previous one again when the backend says they encode
// alike. The pieces of bodies already handed out ([MessagePieces.AppendTo]) keep their bytes
// whatever the next requests change. Not safe for concurrent use.
type MessagePieces struct {
	// msgs[i] is message i of the last request and its encoding, a comma first for i > 0.
	msgs []keptMessage
	// parts[i] is msgs[i]'s encoding and ends[i] the bytes of parts[:i+1]: the messages of the
	// bodies handed out, which share this array up to their own length (handed at most), so
	// that a longer request appends to it; a change before handed copies it first.
	parts  [][]byte
	ends   []int
	handed int
}

type keptMessage struct {
	m   chat.Message
	enc []byte
}

// Update makes the pieces those of msgs. A message that is not the same as the one kept at its
// index (same(kept, m) false, or none kept there) is encoded by encode, which appends its JSON to
// dst (a comma already there for i > 0) and returns the result; the message is then kept with
// its own copy of its tool calls and their arguments, so that a caller changing them in place
// later changes nothing kept. An error of encode is returned as it is, and every encoding is
// dropped: the next Update encodes every message again.
func (p *MessagePieces) Update(msgs []chat.Message, same func(kept, m *chat.Message) bool, encode func(dst []byte, i int, m *chat.Message) ([]byte, error)) error {
	// from is the first message whose piece is not the one parts holds at its place.
	from := min(len(msgs), len(p.parts))
	for i := range msgs {
		m := &msgs[i]
		if i < len(p.msgs) && same(&p.msgs[i].m, m) {
			continue
		}
		enc := make([]byte, 0, len(m.Content)+len(m.Reasoning)+len(m.Content)/8+96)
		if i > 0 {
			enc = append(enc, ',')
		}
		enc, err := encode(enc, i, m)
		if err != nil {
			// The messages kept so far may already hold encodings parts does not. Bodies
			// handed out keep their own arrays.
			*p = MessagePieces{}
			return err
		}
		kept := *m
		kept.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range kept.ToolCalls {
			kept.ToolCalls[j].Arguments = slices.Clone(kept.ToolCalls[j].Arguments)
		}
		e := keptMessage{m: kept, enc: enc}
		if i < len(p.msgs) {
			p.msgs[i] = e
		} else {
			p.msgs = append(p.msgs, e)
		}
		from = min(from, i)
	}
	p.msgs = p.msgs[:len(msgs)]
	if from < len(p.parts) {
		if from < p.handed {
			// Bodies handed out hold parts[:handed]: the pieces from `from` on go in a new array.
			p.parts = append(make([][]byte, 0, len(msgs)+len(msgs)/2+8), p.parts[:from]...)
			p.ends = append(make([]int, 0, cap(p.parts)), p.ends[:from]...)
			p.handed = 0
		}
		p.parts, p.ends = p.parts[:from], p.ends[:from]
	}
	for i := from; i < len(msgs); i++ {
		end := len(p.msgs[i].enc)
		if i > 0 {
			end += p.ends[i-1]
		}
		p.parts, p.ends = append(p.parts, p.msgs[i].enc), append(p.ends, end)
	}
	return nil
}

// AppendTo appends the encodings of the last [MessagePieces.Update]'s messages to b, joined by
// their commas; nothing for none. b shares them: a later Update leaves them as they are.
func (p *MessagePieces) AppendTo(b *Body) {
	if n := len(p.msgs); n > 0 {
		b.AppendList(p.parts[:n:n], p.ends[n-1])
		p.handed = max(p.handed, n)
	}
}

// SameString is a == b, at once for two strings that share their bytes (a conversation's
// messages from request to request), without a call.
func SameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// SameCalls reports whether two messages' tool calls encode alike in every backend: the same
// ids, names and argument bytes, in the same order.
func SameCalls(a, b []chat.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ID != y.ID || x.Name != y.Name || !bytes.Equal(x.Arguments, y.Arguments) {
			return false
		}
	}
	return true
}

// SameTools reports whether two tool lists encode alike: the same names, descriptions and
// parameter bytes, in the same order.
func SameTools(a, b []chat.Tool) bool {
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

// CloneTools returns a copy of tools with their own parameter bytes, to keep beside an
// encoding ([SameTools] compares with it later): a caller changing the parameters in place
// changes nothing kept.
func CloneTools(tools []chat.Tool) []chat.Tool {
	kept := slices.Clone(tools)
	for i := range kept {
		kept[i].Parameters = slices.Clone(kept[i].Parameters)
	}
	return kept
}
