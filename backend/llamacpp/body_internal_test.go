package llamacpp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"lab/chat"
)

// reference is the body as the whole request encodes it, with nothing kept from earlier ones.
func reference(t *testing.T, opts Options, seed int64, req *chat.Request) []byte {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSeed(seed)
	b, err := c.chatBody(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A conversation sent through one client, growing, changing in the middle, shrinking, its tool
// list and settings changing: every body RequestBody gives (its pieces read, and joined) is the
// bytes the whole request encodes to, and every body handed out earlier keeps its bytes after
// the later requests (they share pieces).
func TestRequestBodyIsTheWholeEncoding(t *testing.T) {
	temp := 0.3
	opts := Options{BaseURL: "http://127.0.0.1:1", Model: "m<&>", Temperature: &temp, ChatTemplateKwargs: map[string]any{"x": 1}}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tools := []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(` {"type": "object"} `)}, {Name: "list"}}
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "You are <a> coding agent.\n\t\"quoted\""}}
	add := func(ms ...chat.Message) { msgs = append(msgs, ms...) }
	step := func(i int) {
		id := "call_" + strings.Repeat("x", i+1)
		add(chat.Message{Role: chat.RoleAssistant, Reasoning: "think " + strings.Repeat("é", i), Content: "", ToolCalls: []chat.ToolCall{{ID: id, Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
			chat.Message{Role: chat.RoleTool, Content: strings.Repeat("line\u2028 \x01\n", i+1), ToolCallID: id, ToolName: "read"})
	}
	type sent struct {
		body []byte
		want []byte
	}
	var all []sent
	send := func(req *chat.Request) {
		t.Helper()
		body, err := c.RequestBody(req)
		if err != nil {
			t.Fatal(err)
		}
		want := reference(t, opts, c.seed, req)
		read, _ := io.ReadAll(body.Reader())
		if !bytes.Equal(read, want) || !bytes.Equal(body.Bytes(), want) || body.Len() != len(want) {
			t.Fatalf("request %d: body\n%s\nwant\n%s", len(all), read, want)
		}
		var viaWriteTo bytes.Buffer
		if _, err := body.Reader().(io.WriterTo).WriteTo(&viaWriteTo); err != nil || !bytes.Equal(viaWriteTo.Bytes(), want) {
			t.Fatalf("request %d: WriteTo gives %q (%v)", len(all), viaWriteTo.Bytes(), err)
		}
		cb, err := c.ChatBody(req)
		if err != nil || !bytes.Equal(cb, want) {
			t.Fatalf("request %d: ChatBody %q (%v)", len(all), cb, err)
		}
		all = append(all, sent{body: body.Bytes(), want: want})
		for i, s := range all {
			if !bytes.Equal(s.body, s.want) {
				t.Fatalf("after request %d, request %d's body changed", len(all)-1, i)
			}
		}
	}
	add(chat.Message{Role: chat.RoleUser, Content: "Turn 1 & more"})
	send(&chat.Request{Messages: msgs, Tools: tools, Think: true})
	for i := range 4 {
		step(i)
		send(&chat.Request{Messages: msgs, Tools: tools, Think: true})
	}
	// The previous turn's reasoning leaves (a new turn): messages in the middle change.
	prev := append([]chat.Message(nil), msgs...)
	for i := range msgs {
		msgs[i].Reasoning = ""
	}
	add(chat.Message{Role: chat.RoleUser, Content: "Turn 2"})
	send(&chat.Request{Messages: msgs, Tools: tools, Think: true})
	// The same array changed in place: its new bytes are sent, not the kept ones.
	msgs[2].ToolCalls[0].Arguments[2] = 'P'
	msgs[3].Content = "changed in place"
	send(&chat.Request{Messages: msgs, Tools: tools, Think: true})
	// Shorter (a rewind), then longer again with other messages.
	send(&chat.Request{Messages: msgs[:3], Tools: tools, Think: true})
	step(7)
	send(&chat.Request{Messages: msgs, Tools: tools[:1], Think: false})
	send(&chat.Request{Messages: prev, Tools: nil, Think: true, Generate: 5})
	c.SetSeed(9)
	send(&chat.Request{Messages: prev, Tools: nil, Think: true, Generate: 5})
	send(&chat.Request{Messages: nil})
	// A message that cannot be encoded is an error, and the next request is encoded whole.
	if _, err := c.RequestBody(&chat.Request{Messages: append(msgs[:2:2], chat.Message{Role: "robot"})}); err == nil {
		t.Fatal("an unknown role encoded")
	}
	send(&chat.Request{Messages: msgs, Tools: tools, Think: true})
}
