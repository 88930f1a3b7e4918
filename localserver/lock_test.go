//go:build unix

package localserver

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLockTakesTurns(t *testing.T) {
	s := &Server{Dir: t.TempDir(), URL: "http://127.0.0.1:1"}
	unlock, err := s.Lock(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder (flock locks belong to the open file, so a second open in the same process
	// contends like another process would) waits, and gives up when its context ends.
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want the context's deadline", err)
	}
	if !strings.Contains(log.String(), "waiting for another lab process") {
		t.Errorf("no waiting line: %q", log.String())
	}
	unlock()
	unlock2, err := s.Lock(context.Background(), nil)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
}
