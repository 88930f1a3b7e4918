package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lab/chat"
)

// Marshal encodes v as JSON as the backends send it: HTML characters (<, >, &) not escaped
// (json.Encoder.SetEscapeHTML(false)), so that a prompt's bytes reach the server as written,
// and no trailing newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// QuoteMax is the most bytes [Quote] returns before its "…" mark.
const QuoteMax = 500

// Quote returns b as a Go-quoted string for an error message, cut to about [QuoteMax] bytes at
// a character boundary, "…" marking a cut.
func Quote(b []byte) string {
	if len(b) > 2*QuoteMax {
		b = b[:2*QuoteMax]
	}
	q := strconv.Quote(string(b))
	if len(q) <= QuoteMax {
		return q
	}
	cut := QuoteMax
	for cut > 0 && !utf8.RuneStart(q[cut]) {
		cut--
	}
	return q[:cut] + "…"
}

// Redacted replaces what [Redact] removes.
const Redacted = "[redacted]"

var (
	// keyLike matches the shapes API keys take: OpenAI sk-… and rk-…, OpenRouter sk-or-…,
	// Anthropic sk-ant-…, so that a server's echo of part of a key is not kept either.
	keyLike = regexp.MustCompile(`\b(sk|rk)-[A-Za-z0-9_\-*.]{6,}`)
	// bearer matches an Authorization header's credentials (RFC 6750 §2.1) of 16 characters or
	// more (a word after "Bearer" in prose is not one).
	bearer = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{16,}`)
	// keyParam matches a key in a URL's query (?key=…, &api_key=…, as Gemini's API takes it)
	// and an api-key header echoed as text (x-api-key: …, api-key: …).
	keyParam = regexp.MustCompile(`(?i)(\b(?:x-api-key|api[_-]key)\s*[:=]\s*|[?&](?:api[_-]?)?key=)[^&\s"',;]{6,}`)
)

// Redact removes from s each of keys (an empty key is skipped) and anything shaped like an API
// key: sk-/rk- keys, an Authorization header's bearer token, a key in a URL's query or an
// api-key header. Each is replaced by [Redacted].
func Redact(s string, keys ...string) string {
	for _, k := range keys {
		if k != "" {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	s = keyLike.ReplaceAllString(s, Redacted)
	s = bearer.ReplaceAllString(s, "${1}"+Redacted)
	return keyParam.ReplaceAllString(s, "${1}"+Redacted)
}

// MaxRetryAfter is the longest wait [ParseRetryAfter] returns.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After header value (RFC 9110 §10.2.3), which servers send with
// 429, 503 and Anthropic's 529: delay-seconds, or an HTTP-date from which the wait is counted
// from now, at most [MaxRetryAfter]. Empty, unreadable, negative and past values are 0. For
// [chat.APIError].RetryAfter.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}

// Endpoint names the server a request goes to, for the errors of [Post] and [StatusError].
type Endpoint struct {
	// Backend is chat.APIError.Backend ("openai", "anthropic", …).
	Backend string
	// URL is chat.APIError.URL.
	URL string
	// Key is the API key, redacted from every error text ("" for none).
	Key string
}

// Error returns a *chat.APIError of e with status and msg, msg redacted ([Redact]) and the URL's
// password too ([chat.RedactedURL]).
func (e Endpoint) Error(status int, msg string) *chat.APIError {
	return &chat.APIError{Backend: e.Backend, URL: chat.RedactedURL(e.URL), StatusCode: status, Body: Redact(msg, e.Key)}
}

// Post sends body (nil: none) to url with method and the headers given, through hc (nil:
// http.DefaultClient), with Content-Type application/json when there is a body; a header
// Connection: close also closes the connection after the answer. A canceled or
// timed-out context is returned as it is; any other transport failure is a *chat.APIError of
// ep with no status. The response is returned whatever its status: see [StatusError].
func Post(ctx context.Context, hc *http.Client, ep Endpoint, method, url string, body []byte, headers http.Header) (*http.Response, error) {
	return PostBody(ctx, hc, ep, method, url, BodyOf(body), headers)
}

// PostBody is [Post] with a body held in pieces ([Body]; its zero value: none), sent as they
// are, with its length as Content-Length.
func PostBody(ctx context.Context, hc *http.Client, ep Endpoint, method, url string, body Body, headers http.Header) (*http.Response, error) {
	var rd io.Reader
	if !body.None() {
		rd = body.Reader()
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, ep.Error(0, err.Error())
	}
	if !body.None() {
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = int64(body.Len())
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.Reader()), nil }
		if body.Len() == 0 {
			req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		}
	}
	for k, vs := range headers {
		req.Header[k] = vs
	}
	// net/http's transport drops the connection after a request with Close set, not one whose
	// header alone says Connection: close.
	req.Close = strings.EqualFold(headers.Get("Connection"), "close")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, ep.Error(0, err.Error())
	}
	return resp, nil
}

// ErrorMessage returns the message of an error answer's body: its `error` object's type and
// message as "type: message" ({"error": {"type", "message"}}: OpenAI, Anthropic, vLLM) or its
// string error ({"error": "…"}: Ollama); any other body (an object without a message, an HTML
// page) [Quote]d.
func ErrorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		if m, ok := ErrorObjectMessage(e.Error); ok {
			return m
		}
	}
	return Quote(body)
}

// ErrorObjectMessage returns an error object's "type: message" (or its message), or the error
// when it is a plain string; ok is false for anything else (no message, not an object).
func ErrorObjectMessage(raw json.RawMessage) (string, bool) {
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		if e.Type != "" {
			return e.Type + ": " + e.Message, true
		}
		return e.Message, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, true
	}
	return "", false
}

// MaxErrorBody is the most bytes of an error answer [StatusError] reads.
const MaxErrorBody = 1 << 20

// StatusError reads and closes the body of an answer whose status is not a success and returns
// it as a *chat.APIError of ep: the status, message(body) as its text (nil message: [Quote] of
// the body), redacted, and the answer's Retry-After as RetryAfter. At most [MaxErrorBody] bytes
// of the body are read.
func StatusError(ep Endpoint, resp *http.Response, message func([]byte) string) *chat.APIError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	if message == nil {
		message = Quote
	}
	ae := ep.Error(resp.StatusCode, message(b))
	ae.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return ae
}

// ReadError is a transport failure while reading an answer's body (a connection reset, an
// unexpected EOF), as distinct from an answer that is wrong: the backends record it with no
// HTTP status, so that harness.Retryable retries it.
type ReadError struct{ Err error }

// Error implements error.
func (e ReadError) Error() string { return "read stream: " + e.Err.Error() }

// Unwrap returns the transport's error.
func (e ReadError) Unwrap() error { return e.Err }

// AppendString appends s to dst as a JSON string exactly as [Marshal] writes it (encoding/json
// with HTML escaping off): `"` and `\` escaped with a backslash; \b, \f, \n, \r and \t as such;
// other bytes below 0x20 as \u00XX; invalid UTF-8 as \ufffd; U+2028 and U+2029 as \u2028 and
// \u2029 (encoding/json's appendString); everything else, <, > and & included, as it is. It
// copies the runs that need no escape at once, so a long text costs about its bytes.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
