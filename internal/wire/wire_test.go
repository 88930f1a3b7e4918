package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lab/chat"
)

func TestMarshalKeepsHTML(t *testing.T) {
	b, err := Marshal(map[string]string{"a": "<b> & </b>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"a":"<b> & </b>"}`; got != want {
		t.Errorf("Marshal = %s; want %s", got, want)
	}
}

func TestQuote(t *testing.T) {
	if got := Quote([]byte("a\"b")); got != `"a\"b"` {
		t.Errorf("Quote short = %s", got)
	}
	long := strings.Repeat("é", 600)
	got := Quote([]byte(long))
	if !strings.HasSuffix(got, "…") || len(got) > QuoteMax+len("…") || !utf8.ValidString(got) {
		t.Errorf("Quote long: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-5:])
	}
}

func TestRedact(t *testing.T) {
	const key = "secret-key-123456"
	for _, tc := range []struct{ name, in, want string }{
		{"key given", "invalid x-api-key " + key, "invalid x-api-key " + Redacted},
		{"echoed part of an OpenAI key", `{"error":"Incorrect API key provided: sk-proj-abc***wxyz"}`, `{"error":"Incorrect API key provided: [redacted]"}`},
		{"anthropic key shape", "key sk-ant-api03-AAAAAAAAAA was refused", "key [redacted] was refused"},
		{"URL query", `Post "http://127.0.0.1:9/v1/models?key=AIzaSyDEADBEEF&alt=sse": refused`, `Post "http://127.0.0.1:9/v1/models?key=[redacted]&alt=sse": refused`},
		{"URL api_key", "http://h/x?a=1&api_key=abcdef0123", "http://h/x?a=1&api_key=[redacted]"},
		{"authorization header", "Authorization: Bearer abcdef.0123456789", "Authorization: Bearer [redacted]"},
		{"api-key header", "x-api-key: zzzzzzzzzz", "x-api-key: [redacted]"},
		{"prose kept", "missing key: messages; the key=value pairs", "missing key: messages; the key=value pairs"},
		{"bearer prose kept", "Bearer tokens are required", "Bearer tokens are required"},
	} {
		if got := Redact(tc.in, key); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 30 ", 30 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"9999999", MaxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), MaxRetryAfter},
		{"soon", 0},
	} {
		if got := ParseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func TestPostAndStatusError(t *testing.T) {
	const key = "sk-test-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Test") != "1" {
			t.Errorf("headers %v", r.Header)
		}
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		w.Write([]byte(`{"error":"rate limited for ` + key + `"}`))
	}))
	defer srv.Close()
	ep := Endpoint{Backend: "test", URL: srv.URL, Key: key}
	resp, err := Post(context.Background(), nil, ep, http.MethodPost, srv.URL, []byte(`{}`), http.Header{"X-Test": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	ae := StatusError(ep, resp, nil)
	if ae.StatusCode != 429 || ae.RetryAfter != 3*time.Second || strings.Contains(ae.Body, key) || !strings.Contains(ae.Body, Redacted) || ae.Backend != "test" {
		t.Errorf("StatusError = %+v", ae)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Post(ctx, nil, ep, http.MethodPost, srv.URL, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Post: %v; want context.Canceled", err)
	}
	srv.Close()
	_, err = Post(context.Background(), nil, ep, http.MethodPost, srv.URL+"/?key=abcdefgh", nil, nil)
	var ae2 *chat.APIError
	if !errors.As(err, &ae2) || ae2.StatusCode != 0 || strings.Contains(ae2.Body, "abcdefgh") {
		t.Errorf("Post to a closed server: %v; want an APIError with no status and the key redacted", err)
	}
}

type event struct{ name, data string }

// chunks is a reader that returns its parts one Read at a time, to split lines and events over
// reads.
type chunks struct {
	parts []string
	err   error
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func readAll(t *testing.T, r *chunks, max int64) ([]event, int, error) {
	t.Helper()
	var got []event
	n, err := ReadEvents(bufio.NewReaderSize(r, 16), max, func(name string, data []byte) error {
		got = append(got, event{name, string(data)})
		return nil
	})
	return got, n, err
}

func TestReadEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  []event
	}{
		{"split over reads", []string{"event: a\nda", "ta: {\"x\"", ":1}\n", "\n"}, []event{{"a", `{"x":1}`}}},
		{"CRLF", []string{"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"}, []event{{"a", "1"}, {"", "2"}}},
		{"comments and other fields", []string{": ping\nid: 3\nretry: 10\ndata: 1\n\n: ping\n\n"}, []event{{"", "1"}}},
		{"multi-line data", []string{"data: {\"a\":\ndata: 1}\n\n"}, []event{{"", "{\"a\":\n1}"}}},
		{"no space after colon", []string{"data:[DONE]\n\n"}, []event{{"", "[DONE]"}}},
		{"llama-server error line", []string{"error: {\"message\":\"x\"}\n\n"}, []event{{"error", `{"message":"x"}`}}},
		{"whole last event without blank line", []string{"data: 1\n\ndata: {\"b\":2}"}, []event{{"", "1"}, {"", `{"b":2}`}}},
		{"cut inside the last event", []string{"data: 1\n\ndata: {\"b\":"}, []event{{"", "1"}}},
	} {
		got, n, err := readAll(t, &chunks{parts: tc.parts}, 1<<10)
		if err != nil || n != len(tc.want) || len(got) != len(tc.want) {
			t.Errorf("%s: %d events %q, err %v; want %q", tc.name, n, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: event %d = %q; want %q", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestReadEventsBounds(t *testing.T) {
	// A line past the bound is not read whole.
	_, _, err := readAll(t, &chunks{parts: []string{"data: " + strings.Repeat("x", 100) + "\n\n"}}, 50)
	if !errors.Is(err, chat.ErrWireTooLong) {
		t.Errorf("long line: %v; want ErrWireTooLong", err)
	}
	// Nor an event's data made of short lines.
	_, _, err = readAll(t, &chunks{parts: []string{strings.Repeat("data: 0123456789\n", 10) + "\n"}}, 50)
	if !errors.Is(err, chat.ErrWireTooLong) {
		t.Errorf("long event: %v; want ErrWireTooLong", err)
	}
	// A transport failure is a ReadError, after the events before it.
	got, _, err := readAll(t, &chunks{parts: []string{"data: 1\n\ndata: 2"}, err: errReset}, 1<<10)
	var re ReadError
	if !errors.As(err, &re) || !errors.Is(err, errReset) || len(got) != 1 {
		t.Errorf("reset: %v after %q; want a ReadError after one event", err, got)
	}
	// fn's error stops reading and is returned as it is.
	stop := errors.New("stop")
	n, err := ReadEvents(bufio.NewReader(strings.NewReader("data: 1\n\ndata: 2\n\n")), 1<<10, func(string, []byte) error { return stop })
	if err != stop || n != 1 {
		t.Errorf("fn error: %d, %v; want 1, stop", n, err)
	}
}

var errReset = errors.New("connection reset by peer")

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"error":{"message":"bad model","type":"invalid_request_error"}}`, "invalid_request_error: bad model"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error: Overloaded"},
		{`{"error":{"message":"no type"}}`, "no type"},
		{`{"error":"model not found"}`, "model not found"},
		{`{"error":{"code":1}}`, `"{\"error\":{\"code\":1}}"`},
		{`<html>502</html>`, `"<html>502</html>"`},
	} {
		if got := ErrorMessage([]byte(tc.in)); got != tc.want {
			t.Errorf("ErrorMessage(%s) = %s; want %s", tc.in, got, tc.want)
		}
	}
}
