package harness_test

import (
	"context"
	"testing"

	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
)

// noCachedBackend is renderBackend behind a server that does not say how many tokens it reused
// (Ollama without its debug log).
type noCachedBackend struct{ renderBackend }

func (b *noCachedBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := b.renderBackend.Send(ctx, req, reply)
	if res != nil {
		res.CachedTokens, res.CachedSource = nil, ""
	}
	return res, err
}

// Without a measured cached count the re-read is unknown, and so is its split: never the prompt
// less the expected cached tokens (the old rows' estimate), which the lab still computes.
func TestRereadUnknownWithoutCachedTokens(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	sink := &metrics.MemorySink{}
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop, Backend: &noCachedBackend{renderBackend{conv: conv}},
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sink.Samples() {
		if s.CachedTokens != nil || s.CachedSource != "" {
			t.Fatalf("request %d: cached %v (%q); want unknown", s.RequestIndex, s.CachedTokens, s.CachedSource)
		}
		if s.RereadTokens != nil {
			t.Errorf("request %d: reread_tokens %d; want null (prompt %d, expected %d)", s.RequestIndex, *s.RereadTokens, s.PromptTokens, val(s.ExpectedCachedTokens))
		}
		for i, p := range s.RereadSplit() {
			if *p != nil {
				t.Errorf("request %d: reread_%s_tokens %d; want null", s.RequestIndex, metrics.RereadSplitNames[i], **p)
			}
		}
		if s.ExpectedCachedTokens == nil || s.ExpectedUnknown || s.ReasoningTokensSent == nil {
			t.Errorf("request %d: expected %v (unknown %v), reasoning sent %v; want them computed", s.RequestIndex, s.ExpectedCachedTokens, s.ExpectedUnknown, s.ReasoningTokensSent)
		}
	}
}

// failingBackend answers every request with a server error.
type failingBackend struct{}

func (failingBackend) Send(context.Context, *chat.Request, *chat.Reply) (*chat.Result, error) {
	return nil, &chat.APIError{Backend: "fake", URL: "http://127.0.0.1:1", StatusCode: 400, Body: "bad request"}
}

// A failed request's row has its error and no figure: every count null, expected_unknown true
// (equal to expected_cached_tokens being null, as on every row).
func TestFailedRequestRowIsNull(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	sink := &metrics.MemorySink{}
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop, Backend: failingBackend{},
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
	})
	rows := sink.Samples()
	if err == nil || len(rows) != 1 {
		t.Fatalf("RunSession = %v, %d rows; want the error and its row", err, len(rows))
	}
	s := rows[0]
	if s.Error == "" || !s.ExpectedUnknown || s.ExpectedCachedTokens != nil || s.PromptTokens != 0 || s.CompletionTokens != nil ||
		s.RereadTokens != nil || s.LoadNs != nil || s.ReasoningTokensSent != nil || s.TTFTNs != 0 || s.RereadMessageTokens != nil {
		t.Errorf("failed row: %+v; want its error and no figure", s)
	}
}
