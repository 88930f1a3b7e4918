package harness_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"lab/arms"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

func TestRetryable(t *testing.T) {
	t.Parallel()
	api := func(status int, body string) error {
		return &chat.APIError{Backend: "openai", URL: "http://127.0.0.1:1/v1", StatusCode: status, Body: body}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"interrupt", fmt.Errorf("send: %w", context.Canceled), false},
		{"request timeout", fmt.Errorf("%w: no complete answer", harness.ErrRequestTimeout), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"unexpected EOF", fmt.Errorf("read stream: %w", io.ErrUnexpectedEOF), true},
		{"no answer", api(0, "dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{"408", api(408, "timeout"), true},
		{"429", api(429, "rate limited"), true},
		{"500", api(500, "boom"), true},
		{"503", api(503, "overloaded"), true},
		{"400", api(400, "bad request"), false},
		{"401", api(401, "bad key"), false},
		{"404", api(404, "no such model"), false},
		{"stream cut after 200", api(200, "read stream: unexpected EOF"), true},
		{"malformed stream after 200", api(200, "stream chunk 2 is not JSON: invalid character"), false},
		{"plain error", errors.New("tokenize: bad input"), false},
		{"no answer, unreadable", api(0, "invalid character 'x' looking for beginning of value"), false},
		{"no rendering", api(0, "no _debug_info.rendered_template in the answer"), false},
		{"cache fill after the measure", &chat.CacheFillError{Err: api(500, "boom")}, false},
		{"unknown host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}, false},
		{"ollama stream without done", api(200, "the answer stream ended before its done message: unexpected EOF"), true},
		{"responses stream server_error", api(0, "response.failed: server_error: The server had an error"), true},
		{"responses stream rate limit", api(0, "stream error: rate_limit_exceeded"), true},
		{"HTTP/2 GOAWAY", api(0, "http2: server sent GOAWAY and closed the connection"), true},
		{"connection timed out", api(0, "dial tcp 10.0.0.1:443: connect: connection timed out"), true},
		{"no route", api(0, "dial tcp 10.0.0.1:443: connect: no route to host"), true},
		{"idle connection closed", api(0, "http: server closed idle connection"), true},
		{"anthropic overloaded in stream", api(200, "overloaded_error: Overloaded"), true},
		{"unknown host as text", api(0, "dial tcp: lookup nowhere.invalid: no such host"), false},
		{"stream without its end marker", chat.CutError("anthropic", "http://127.0.0.1:1", "no message_stop"), true},
		{"empty 200", chat.NotAnswerError("openai", "http://127.0.0.1:1/v1", "application/json", nil), true},
		{"HTML 200", chat.NotAnswerError("openai", "http://127.0.0.1:1/v1", "text/html", []byte("<html>")), false},
		{"reply past the limit", chat.ReplyTooLongError("ollama", "http://127.0.0.1:1", 1024), false},
	} {
		if got := harness.Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%s: %v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// faultBackend answers like renderBackend, except that fail, given the 1-based number of the
// Send call, may return an error instead (before the server's cache changes).
type faultBackend struct {
	renderBackend
	mu    sync.Mutex
	calls int
	fail  func(call int, req *chat.Request) error
}

func (b *faultBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.mu.Unlock()
	if b.fail != nil {
		if err := b.fail(n, req); err != nil {
			return &chat.Result{}, err
		}
	}
	return b.renderBackend.Send(ctx, req, reply)
}

// Reset empties the cache, as a real backend does before each session.
func (b *faultBackend) Reset(context.Context) error { b.prev = ""; return nil }

// sleeps records the waits of a retry policy without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func newFault(fail func(int, *chat.Request) error) *faultBackend {
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	return &faultBackend{renderBackend: renderBackend{conv: conv}, fail: fail}
}

// runOne runs the tiny scenario once with the spec arm and the policy p through harness.Run.
func runOne(t *testing.T, be harness.Backend, p harness.RetryPolicy, names ...string) (string, *metrics.Manifest, []metrics.Sample, error) {
	t.Helper()
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	if len(names) == 0 {
		names = []string{"spec"}
	}
	var as []arms.Arm
	for _, a := range names {
		as = append(as, arm(t, a))
	}
	dir, man, runErr := harness.Run(context.Background(), harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: as, ResultsDir: t.TempDir(), RunID: "r",
		Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{}, SandboxDir: t.TempDir(), Retry: p,
	})
	if dir == "" {
		t.Fatalf("no run folder: %v", runErr)
	}
	_, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatalf("the samples of a run that ended with %v are unreadable: %v", runErr, err)
	}
	return dir, man, samples, runErr
}

// A 429 with Retry-After is waited out (the server's wait, not the shorter backoff, capped by
// MaxWait), the request is sent again, and its row records the retries and the wait.
func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		maxWait    time.Duration
		want       []time.Duration
	}{
		{"retry-after", 7 * time.Second, 0, []time.Duration{7 * time.Second, 7 * time.Second}},
		{"capped", 7 * time.Second, 5 * time.Second, []time.Duration{5 * time.Second, 5 * time.Second}},
		{"backoff doubles", 0, 0, []time.Duration{time.Second, 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			be := newFault(func(call int, _ *chat.Request) error {
				if call == 3 || call == 4 { // the third request: twice refused, then answered
					return &chat.APIError{Backend: "fake", StatusCode: 429, Body: "slow down", RetryAfter: tc.retryAfter}
				}
				return nil
			})
			sl := &sleeps{}
			_, man, samples, err := runOne(t, be, harness.RetryPolicy{MaxWait: tc.maxWait, Sleep: sl.sleep})
			if err != nil || !man.Complete {
				t.Fatalf("run: %v, complete %v", err, man.Complete)
			}
			if fmt.Sprint(sl.d) != fmt.Sprint(tc.want) {
				t.Errorf("waits %v; want %v", sl.d, tc.want)
			}
			s := samples[2]
			var total time.Duration
			for _, d := range tc.want {
				total += d
			}
			if s.Retries != 2 || s.RetryWaitNs != int64(total) || s.Error != "" || s.PromptTokens == 0 {
				t.Errorf("row 2: retries %d, wait %d ns, error %q, prompt %d; want 2 retries, %d ns, no error", s.Retries, s.RetryWaitNs, s.Error, s.PromptTokens, total)
			}
			if !strings.Contains(s.Warnings, "attempt 1 failed") || !strings.Contains(s.Warnings, "HTTP 429") {
				t.Errorf("row 2 warnings %q; want the failed attempts", s.Warnings)
			}
			for _, o := range samples {
				if o.RequestIndex != 2 && o.Retries != 0 {
					t.Errorf("row %d: %d retries", o.RequestIndex, o.Retries)
				}
			}
		})
	}
}

// Retries are bounded: a server that always fails gets Attempts requests, and the session ends
// with the error in its row. A 4xx other than 408 and 429 is not sent again.
func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		wantCalls int
	}{{500, 3}, {503, 3}, {408, 3}, {400, 1}, {404, 1}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			be := newFault(func(call int, _ *chat.Request) error {
				if call >= 2 {
					return &chat.APIError{Backend: "fake", StatusCode: tc.status, Body: "no"}
				}
				return nil
			})
			sl := &sleeps{}
			_, man, samples, err := runOne(t, be, harness.RetryPolicy{Sleep: sl.sleep})
			var se *harness.SessionsError
			if !errors.As(err, &se) || se.Failed != 1 || se.Total != 1 {
				t.Fatalf("run error %v; want 1 of 1 sessions failed", err)
			}
			if man.Complete || !strings.Contains(man.Error, "1 of 1 sessions failed") {
				t.Errorf("manifest complete %v, error %q", man.Complete, man.Error)
			}
			if got := be.calls - 1; got != tc.wantCalls {
				t.Errorf("the failing request was sent %d times; want %d", got, tc.wantCalls)
			}
			if len(samples) != 2 || samples[1].Error == "" || samples[1].Retries != int32(tc.wantCalls-1) {
				t.Fatalf("rows %d, last error %q, retries %d", len(samples), samples[len(samples)-1].Error, samples[len(samples)-1].Retries)
			}
			if !strings.Contains(samples[1].Error, fmt.Sprintf("HTTP %d", tc.status)) {
				t.Errorf("error column %q", samples[1].Error)
			}
		})
	}
}

// A server that stalls: each attempt ends at the request timeout, is retried, and the row says
// it timed out.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	stall := &stallBackend{faultBackend: newFault(nil), stallOn: 2}
	sl := &sleeps{}
	_, man, samples, err := runOne(t, stall, harness.RetryPolicy{Attempts: 2, RequestTimeout: 20 * time.Millisecond, Sleep: sl.sleep})
	if err == nil || man.Complete {
		t.Fatalf("run error %v, complete %v; want a failed session", err, man.Complete)
	}
	last := samples[len(samples)-1]
	if len(samples) != 2 || last.Retries != 1 || !strings.Contains(last.Error, "request timed out") || !strings.Contains(last.Error, "20ms") {
		t.Errorf("%d rows; last: retries %d, error %q", len(samples), last.Retries, last.Error)
	}
}

// stallBackend never answers its stallOn-th call (1-based): it waits for the context to end.
type stallBackend struct {
	*faultBackend
	stallOn int
	n       int
}

func (b *stallBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.n++
	if b.n >= b.stallOn {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.faultBackend.Send(ctx, req, reply)
}

// A session that cannot go on ends with its error row and the run goes on with the next
// session; at the end the run says how many failed, and the manifest is incomplete.
func TestRunGoesOnAfterAFailedSession(t *testing.T) {
	t.Parallel()
	be := newFault(func(_ int, req *chat.Request) error {
		// The date arm's system prompt starts with the date: refuse its third request for good.
		if !strings.HasPrefix(req.Messages[0].Content, "You") && len(req.Messages) > 4 {
			return &chat.APIError{Backend: "fake", StatusCode: 400, Body: "context too long"}
		}
		return nil
	})
	_, man, samples, err := runOne(t, be, harness.RetryPolicy{}, "date-in-system-prompt", "spec")
	var se *harness.SessionsError
	if !errors.As(err, &se) || se.Failed != 1 || se.Total != 2 || !strings.HasPrefix(err.Error(), "1 of 2 sessions failed; tiny/date-in-system-prompt repetition 1: ") {
		t.Fatalf("run error %v; want 1 of 2 sessions failed naming the session", err)
	}
	if man.Complete || man.Error != err.Error() {
		t.Errorf("manifest: complete %v, error %q", man.Complete, man.Error)
	}
	byArm := map[string][]metrics.Sample{}
	for _, s := range samples {
		byArm[s.Arm] = append(byArm[s.Arm], s)
	}
	date, spec := byArm["date-in-system-prompt"], byArm["spec"]
	if len(date) == 0 || date[len(date)-1].Error == "" || len(date) >= 7 {
		t.Errorf("date arm: %d rows, last error %q; want it cut with the error recorded", len(date), date[len(date)-1].Error)
	}
	if len(spec) != 7 {
		t.Errorf("spec arm: %d rows; want all 7 (the run went on)", len(spec))
	}
	if man.Samples != len(samples) {
		t.Errorf("manifest samples %d, file %d", man.Samples, len(samples))
	}
}
