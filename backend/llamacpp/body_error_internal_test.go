package llamacpp

import (
	"bytes"
	"testing"

	"lab/chat"
)

// A request that fails to encode after a changed message must not leave that message's new
// encoding kept while the body's pieces hold the old one: the next request sends the new text.
func TestRequestBodyAfterError(t *testing.T) {
	opts := Options{BaseURL: "http://127.0.0.1:1"}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a := chat.Message{Role: chat.RoleSystem, Content: "sys"}
	b := chat.Message{Role: chat.RoleUser, Content: "first"}
	b2 := chat.Message{Role: chat.RoleUser, Content: "second"}
	if _, err := c.RequestBody(&chat.Request{Messages: []chat.Message{a, b, {Role: chat.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestBody(&chat.Request{Messages: []chat.Message{a, b2, {Role: "robot"}}}); err == nil {
		t.Fatal("robot encoded")
	}
	req := &chat.Request{Messages: []chat.Message{a, b2, {Role: chat.RoleUser, Content: "x"}}}
	body, err := c.RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, opts, c.seed, req)
	if got := body.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
}

// A tool list whose parameters change in place between two requests: the second body must
// carry the new parameters, as it carries a message changed in place.
func TestRequestBodyToolsChangedInPlace(t *testing.T) {
	opts := Options{BaseURL: "http://127.0.0.1:1"}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tools := []chat.Tool{{Name: "read", Parameters: []byte(`{"type":"object"}`)}}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	if _, err := c.RequestBody(&chat.Request{Messages: msgs, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	copy(tools[0].Parameters[9:], "OBJECT")
	req := &chat.Request{Messages: msgs, Tools: tools}
	body, err := c.RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := reference(t, opts, c.seed, req); !bytes.Equal(body.Bytes(), want) {
		t.Fatalf("body\n%s\nwant\n%s", body.Bytes(), want)
	}
}
