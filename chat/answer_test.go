package chat_test

import (
	"bufio"
	"strings"
	"testing"

	"lab/chat"
)

func TestSniffAnswer(t *testing.T) {
	for _, tc := range []struct {
		ctype, head string
		want        chat.AnswerForm
	}{
		{"text/event-stream", "data: {}", chat.AnswerEvents},
		{"text/event-stream; charset=utf-8", ": ping", chat.AnswerEvents},
		{"application/json", `{"id":"x"}`, chat.AnswerJSON},
		{"application/problem+json", `{"title":"x"}`, chat.AnswerJSON},
		{"application/x-ndjson", `{"done":false}`, chat.AnswerLines},
		{"", "\n\n  data: {}", chat.AnswerEvents},
		{"text/plain", "event: message_start", chat.AnswerEvents},
		{"", `{"choices":[]}`, chat.AnswerJSON},
		{"text/event-stream", "  \r\n", chat.AnswerEmpty},
		{"application/json", "", chat.AnswerEmpty},
		{"text/html", "<!DOCTYPE html><html>", chat.AnswerOther},
		{"application/json", "<html>", chat.AnswerOther},
		{"text/event-stream", "<html>", chat.AnswerOther},
		{"text/plain", "Internal Server Error", chat.AnswerOther},
		{"text/html", `{"a":1}`, chat.AnswerOther},
	} {
		if got := chat.SniffAnswer(tc.ctype, []byte(tc.head)); got != tc.want {
			t.Errorf("SniffAnswer(%q, %q) = %d; want %d", tc.ctype, tc.head, got, tc.want)
		}
	}
}

func TestPeekAnswer(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("\n \n" + strings.Repeat("x", 100)))
	head, err := chat.PeekAnswer(br)
	if err != nil || string(head) != strings.Repeat("x", 64) {
		t.Errorf("PeekAnswer = %q, %v; want 64 x", head, err)
	}
	if rest, _ := br.ReadString(0); rest != strings.Repeat("x", 100) {
		t.Errorf("after PeekAnswer the reader holds %q; want the body less its leading white space", rest)
	}
	if head, err := chat.PeekAnswer(bufio.NewReader(strings.NewReader(" \n"))); head != nil || err != nil {
		t.Errorf("PeekAnswer of white space = %q, %v; want nothing", head, err)
	}
}

func TestNotAnswerError(t *testing.T) {
	e := chat.NotAnswerError("openai", "http://127.0.0.1:1/v1", "text/html; charset=utf-8", []byte("<!DOCTYPE html>"+strings.Repeat("y", 100)))
	if e.StatusCode != 200 || !strings.HasPrefix(e.Body, `HTTP 200 with a text/html body, not the API's answer: "<!DOCTYPE html>yyy`) || !strings.HasSuffix(e.Body, "…") {
		t.Errorf("NotAnswerError = %d %q", e.StatusCode, e.Body)
	}
	if e := chat.NotAnswerError("openai", "u", "", []byte("oops")); e.Body != `HTTP 200 with a body of no Content-Type, not the API's answer: "oops"` {
		t.Errorf("no Content-Type: %q", e.Body)
	}
	if e := chat.NotAnswerError("openai", "u", "text/html", nil); e.Body != "stream cut: HTTP 200 with an empty body" {
		t.Errorf("empty: %q", e.Body)
	}
}
