package harness_test

import (
	"context"
	"lab/arms"
	"strings"
	"testing"

	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// The run's reply limit reaches every request the backend gets, and a reply past it (the
// backend's chat.ReplyTooLongError) is an error row naming the limit, sent once: not retried.
func TestReplyLimitReachesTheBackendAndIsNotRetried(t *testing.T) {
	t.Parallel()
	var limits []int64
	be := newFault(func(n int, req *chat.Request) error {
		limits = append(limits, req.MaxReplyBytes)
		if n == 2 {
			return chat.ReplyTooLongError("openai", "http://127.0.0.1:1/v1", req.ReplyLimit())
		}
		return nil
	})
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	sl := &sleeps{}
	dir, _, runErr := harness.Run(context.Background(), harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: t.TempDir(), RunID: "r",
		Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{}, SandboxDir: t.TempDir(),
		Retry: harness.RetryPolicy{Sleep: sl.sleep}, MaxReplyBytes: 1024,
	})
	if runErr == nil {
		t.Fatal("a run whose reply grew past the limit ended without an error")
	}
	if be.calls != 2 {
		t.Errorf("the backend got %d requests; want 2 (the reply past the limit is not sent again)", be.calls)
	}
	for i, l := range limits {
		if l != 1024 {
			t.Errorf("request %d carried MaxReplyBytes %d; want the run's 1024", i+1, l)
		}
	}
	_, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 {
		t.Fatalf("%d rows; want 2 (the second an error row)", len(samples))
	}
	if e := samples[1].Error; !strings.Contains(e, chat.ReplyTooLong) || !strings.Contains(e, "1024 bytes") {
		t.Errorf("the error row's error = %q; want it to name the limit (1024 bytes)", e)
	}
	if samples[1].Retries != 0 {
		t.Errorf("the error row records %d retries; want 0", samples[1].Retries)
	}
}
