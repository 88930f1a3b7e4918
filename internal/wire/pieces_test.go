package wire

import (
	"errors"
	"fmt"
	"testing"

	"lab/chat"
)

// MessagePieces encodes a message only when it changed, keeps what bodies handed out hold, and
// starts afresh after an error.
func TestMessagePieces(t *testing.T) {
	var p MessagePieces
	var encoded []int
	same := func(kept, m *chat.Message) bool { return kept.Content == m.Content }
	encode := func(dst []byte, i int, m *chat.Message) ([]byte, error) {
		if m.Content == "bad" {
			return nil, errors.New("bad message")
		}
		encoded = append(encoded, i)
		return fmt.Appendf(dst, "%q", m.Content), nil
	}
	body := func(msgs ...string) (string, []int) {
		t.Helper()
		encoded = nil
		var ms []chat.Message
		for _, c := range msgs {
			ms = append(ms, chat.Message{Role: chat.RoleUser, Content: c})
		}
		if err := p.Update(ms, same, encode); err != nil {
			t.Fatal(err)
		}
		var b Body
		p.AppendTo(&b)
		return string(b.Bytes()), encoded
	}
	first, enc := body("a", "b")
	if first != `"a","b"` || fmt.Sprint(enc) != "[0 1]" {
		t.Fatalf("first body %s, encoded %v", first, enc)
	}
	var held Body
	p.AppendTo(&held)
	if got, enc := body("a", "b", "c"); got != `"a","b","c"` || fmt.Sprint(enc) != "[2]" {
		t.Errorf("a message added: body %s, encoded %v; want only message 2 encoded", got, enc)
	}
	if got, enc := body("a", "x"); got != `"a","x"` || fmt.Sprint(enc) != "[1]" {
		t.Errorf("a message changed: body %s, encoded %v; want only message 1 encoded", got, enc)
	}
	if got := string(held.Bytes()); got != `"a","b"` {
		t.Errorf("a body handed out before the change now holds %s; want its own bytes", got)
	}
	if err := p.Update([]chat.Message{{Content: "y"}, {Content: "bad"}}, same, encode); err == nil {
		t.Fatal("no error from a message that fails to encode")
	}
	if got, enc := body("y", "x"); got != `"y","x"` || fmt.Sprint(enc) != "[0 1]" {
		t.Errorf("after an error: body %s, encoded %v; want every message encoded again", got, enc)
	}
	if got, _ := body(); got != "" {
		t.Errorf("no messages: body %q", got)
	}
}
