package replytest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"lab/chat"
)

// CheckCutShort fails t unless err is the reply-too-long error ([chat.ReplyTooLongError], an
// *chat.APIError whose Body starts with [chat.ReplyTooLong]) naming a limit of limit bytes, and
// the flood's server saw the client go before it had written its whole answer: the client
// stopped reading at the limit.
func (f *Flood) CheckCutShort(t testing.TB, err error, limit int64) {
	t.Helper()
	var ae *chat.APIError
	named := fmt.Sprintf("%d bytes", limit)
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) || !strings.Contains(ae.Body, named) {
		t.Fatalf("reading a %d-byte answer with a limit of %d bytes: %.300v; want the reply-too-long error naming %s", f.Total(), limit, err, named)
	}
	written, gone := f.Wait()
	if !gone || written >= f.Total() {
		t.Errorf("the server wrote %d of %d bytes (connection gone: %v); want the client to close the body early", written, f.Total(), gone)
	}
}

// BenchSend runs send once per iteration of b under [Measure] and reports its figures
// ([Report]) for a reply of size bytes; it fails b when send fails or when the reply's content
// is not size bytes long.
func BenchSend(b *testing.B, size int64, send func() (*chat.Result, error)) {
	b.Helper()
	for b.Loop() {
		var res *chat.Result
		alloc, peak := Measure(func() any {
			var err error
			if res, err = send(); err != nil {
				b.Fatal(err)
			}
			return res
		})
		if got := int64(len(res.Reply.Content)); got != size {
			b.Fatalf("reply of %d bytes; want %d", got, size)
		}
		Report(b, size, alloc, peak)
	}
}

// Secret is the password the base URLs of [PasswordNotInErrors] carry.
const Secret = "pa55w0rd-secret"

// PasswordNotInErrors checks that a backend names no base URL's password
// (http://user:Secret@host) in its errors. For each of three bad answers, an HTTP 500 with an
// OpenAI-style JSON error, an HTML page that is not the API's, and tooLong (served as
// contentType, a reply past the 1,000-byte limit send is to set), it starts a loopback server
// giving it, with route (when set) seeing each request first and answering it itself when it
// returns true (an Ollama render-only request), and calls send with the server's URL carrying
// the password. It fails t when send returns no error, or one whose text holds the password.
func PasswordNotInErrors(t testing.TB, contentType, tooLong string, route func(w http.ResponseWriter, r *http.Request) bool, send func(baseURL string) error) {
	t.Helper()
	answers := map[string]func(w http.ResponseWriter){
		"HTTP 500": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		},
		"not the API": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>hello</html>")
		},
		"reply too long": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", contentType)
			io.WriteString(w, tooLong)
		},
	}
	for name, answer := range answers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if route != nil && route(w, r) {
				return
			}
			answer(w)
		}))
		err := send(strings.Replace(srv.URL, "http://", "http://user:"+Secret+"@", 1))
		srv.Close()
		if err == nil || strings.Contains(err.Error(), Secret) {
			t.Errorf("%s: error %v; want one without the base URL's password", name, err)
		}
	}
}
