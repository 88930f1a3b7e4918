package harness_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
)

// fillBackend is a [harness.CacheFiller]: Measure measures against the cache as renderBackend
// does and leaves the cache holding the prompt; FillCache appends the reply, failing as failFill
// says (call is the 1-based count of fills).
type fillBackend struct {
	renderBackend
	mu       sync.Mutex
	measures int
	fills    int
	failFill func(call int) error
}

func (b *fillBackend) Measure(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.mu.Lock()
	b.measures++
	b.mu.Unlock()
	if reply == nil {
		reply = &chat.Reply{}
	}
	res, err := b.renderBackend.Send(ctx, req, reply)
	if err != nil {
		return nil, err
	}
	// The server holds the prompt alone until the fill.
	b.prev, res.CacheText = res.Rendered, ""
	return res, nil
}

func (b *fillBackend) FillCache(_ context.Context, _ *chat.Request, reply *chat.Reply, res *chat.Result) error {
	if reply == nil {
		return nil
	}
	b.mu.Lock()
	b.fills++
	n := b.fills
	b.mu.Unlock()
	if b.failFill != nil {
		if err := b.failFill(n); err != nil {
			return err
		}
	}
	res.CacheText = res.Rendered + ollama.Qwen3Output(reply)
	b.prev = res.CacheText
	return nil
}

func (b *fillBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := b.Measure(ctx, req, reply)
	if err != nil {
		return res, err
	}
	if err := b.FillCache(ctx, req, reply, res); err != nil {
		return res, &chat.CacheFillError{Err: err}
	}
	return res, nil
}

func newFillBackend(fail func(int) error) *fillBackend {
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	return &fillBackend{renderBackend: renderBackend{conv: conv}, failFill: fail}
}

// A cache fill that fails is retried on its own: the measured request is sent once per row, its
// figures are kept, and every row's cached tokens equal the expected ones. A fill that fails
// for good leaves its row the measurement with a warning, and the next row's expected cached
// tokens count from what the server then holds (the prompt without the reply).
func TestFailedCacheFillKeepsTheMeasurement(t *testing.T) {
	t.Parallel()
	eof := &chat.APIError{Backend: "fake", Body: "generation emulation: Post /completion: EOF"}
	for _, tc := range []struct {
		name      string
		fail      func(int) error
		wantWaits int // waits between fill attempts
		forGood   bool
		// plain hides Measure and FillCache: the harness sees Send's CacheFillError.
		plain bool
	}{
		{"fails once", func(n int) error {
			if n == 3 {
				return eof
			}
			return nil
		}, 1, false, false},
		{"fails for good", func(n int) error {
			if n >= 3 && n <= 5 {
				return eof
			}
			return nil
		}, 2, true, false},
		{"a plain Send's CacheFillError", func(n int) error {
			if n == 3 {
				return eof
			}
			return nil
		}, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			be := newFillBackend(tc.fail)
			var run harness.Backend = be
			if tc.plain {
				run = sendOnly{be}
			}
			sl := &sleeps{}
			_, man, samples, err := runOne(t, run, harness.RetryPolicy{Sleep: sl.sleep})
			if err != nil || !man.Complete {
				t.Fatalf("run: %v, complete %v", err, man.Complete)
			}
			if be.measures != len(samples) {
				t.Errorf("%d measured requests for %d rows: the measurement was sent again", be.measures, len(samples))
			}
			for i, s := range samples {
				if s.Error != "" || s.Retries != 0 || s.CachedTokens == nil || s.ExpectedCachedTokens == nil {
					t.Fatalf("row %d: error %q, retries %d, cached %v, expected %v", i, s.Error, s.Retries, s.CachedTokens, s.ExpectedCachedTokens)
				}
				if *s.CachedTokens != *s.ExpectedCachedTokens {
					t.Errorf("row %d: cached %d, expected %d", i, *s.CachedTokens, *s.ExpectedCachedTokens)
				}
			}
			row := samples[2]
			if tc.plain == strings.Contains(row.Warnings, "cache fill attempt 1 failed") || strings.Contains(row.Warnings, "sent again") {
				t.Errorf("row 2 warnings %q; want the failed fill attempt, no resend", row.Warnings)
			}
			if got := strings.Contains(row.Warnings, harness.WarningFillFailed); got != tc.forGood {
				t.Errorf("row 2 warnings %q: %q %v, want %v", row.Warnings, harness.WarningFillFailed, got, tc.forGood)
			}
			if got := strings.Contains(samples[3].Warnings, harness.WarningAfterFailedFill); got != tc.forGood {
				t.Errorf("row 3 warnings %q: %q %v, want %v", samples[3].Warnings, harness.WarningAfterFailedFill, got, tc.forGood)
			}
			if len(sl.d) != tc.wantWaits {
				t.Errorf("%d waits %v; want %d (one per failed fill attempt but the last)", len(sl.d), sl.d, tc.wantWaits)
			}
		})
	}
}

// Through the llama-server backend: a generation emulation (/completion) that fails once, its
// connection dropped unanswered as a server closing it does, is sent again alone; the measured
// request is sent once per row and no row records a retry.
func TestLlamaCppFailedFillIsNotRemeasured(t *testing.T) {
	t.Parallel()
	llamaWhole := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"timings\":{\"cache_n\":30,\"prompt_n\":10,\"prompt_ms\":1}}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
	var mu sync.Mutex
	chats, fills := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/apply-template":
			json.NewEncoder(w).Encode(map[string]string{"prompt": string(b)})
		case "/v1/chat/completions":
			chats++
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, llamaWhole)
		case "/slots":
			io.WriteString(w, `[{"id":0}]`)
		case "/slots/0":
			io.WriteString(w, `{"id_slot":0,"n_erased":0}`)
		case "/completion":
			if fills++; fills == 2 {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close() // EOF, no answer
				return
			}
			io.WriteString(w, `{"content":"","tokens_evaluated":40}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL, Output: func(r *chat.Reply) string { return r.Content + "<|im_end|>" }})
	if err != nil {
		t.Fatal(err)
	}
	sl := &sleeps{}
	_, man, samples, err := runOne(t, c, harness.RetryPolicy{Sleep: sl.sleep})
	if err != nil || !man.Complete {
		t.Fatalf("run: %v, complete %v", err, man.Complete)
	}
	if chats != len(samples) {
		t.Errorf("%d measured requests for %d rows: the measurement was sent again", chats, len(samples))
	}
	var noted int
	for i, s := range samples {
		if s.Retries != 0 || s.Error != "" {
			t.Errorf("row %d: retries %d, error %q", i, s.Retries, s.Error)
		}
		if strings.Contains(s.Warnings, "cache fill attempt 1 failed") {
			noted++
		}
	}
	if noted != 1 || fills != len(samples)+1 {
		t.Errorf("%d rows note the failed fill, %d fills for %d rows; want 1 and one more fill than rows", noted, fills, len(samples))
	}
}
