package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"lab/hygiene"
	"lab/tools"
	"lab/tools/toolstest"
)

// Every tool that walks or reads stops at its time limit: the read under way when the limit
// passes is the last one (the walk checks the deadline at each folder, file and chunk), and the
// model reads that the call ran past its limit.
func TestToolCallStopsAtItsTimeLimit(t *testing.T) {
	big := strings.Repeat("a line of a big file\n", 50_000) // about 1 MB: 16 chunks of 64 KiB
	for _, c := range []struct{ tool, args string }{
		{"grep", `{"pattern":"needle"}`},
		{"glob", `{"pattern":"**/*.txt"}`},
		{"list", `{}`},
		{"read", `{"path":"big.txt"}`},
		{"edit", `{"path":"big.txt","old_string":"x","new_string":"y"}`},
		{"write", `{"path":"big.txt","content":"new\n"}`},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Update File: big.txt\n@@\n-a line\n+b line\n*** End Patch"}`},
	} {
		t.Run(c.tool, func(t *testing.T) {
			ws, hs := newWS(t, hygiene.Spec(), append(toolstest.Tree(40, 5), "big.txt", big)...)
			reads := toolstest.SlowDisk(t, 3, nil)
			limit := 50 * time.Millisecond
			got, err := ws.RunWithin(context.Background(), limit, hs, c.tool, []byte(c.args))
			var stop *tools.StoppedError
			if !errors.As(err, &stop) || stop.Parent != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s = %q, %v; want a *StoppedError by its own limit", c.tool, got, err)
			}
			want := fmt.Sprintf("(stopped: the %s call ran past its time limit of 50ms)", c.tool)
			if !strings.HasSuffix(got, want) {
				t.Errorf("%s answered %q; want it to end %q", c.tool, got, want)
			}
			if n := reads.Load(); n != 3 {
				t.Errorf("%s read %d folders and chunks; want 3, the one the limit passed in the last", c.tool, n)
			}
			// The next call has a limit of its own and runs whole.
			if got, err := ws.RunWithin(context.Background(), time.Minute, hs, "read", []byte(`{"path":"d000/f000.txt"}`)); err != nil || !strings.Contains(got, "needle") {
				t.Errorf("the next call = %q, %v; want the file", got, err)
			}
		})
	}
}

// A stop of the run (Ctrl-C, SIGTERM: the run's context cancelled) during a tool call ends the
// call at once, whatever its own limit.
func TestToolCallEndsWhenTheRunIsStopped(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), toolstest.Tree(40, 5)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := toolstest.SlowDisk(t, 3, cancel)
	got, err := ws.RunWithin(ctx, time.Hour, hs, "grep", []byte(`{"pattern":"needle"}`))
	if !errors.Is(err, context.Canceled) || !strings.HasSuffix(got, "(stopped: the grep call was stopped with the run)") {
		t.Errorf("grep = %q, %v; want it stopped with the run", got, err)
	}
	if n := reads.Load(); n != 3 {
		t.Errorf("grep read %d folders and chunks; want 3", n)
	}
}
