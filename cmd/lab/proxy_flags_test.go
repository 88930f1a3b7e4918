package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// More of lab proxy's bad flags, each refused as bad input (exit 2) before it listens: an
// upstream without a scheme, a negative context window, a label that cannot name an arm, a
// negative size bound.
func TestProxyRefusesMoreBadFlags(t *testing.T) {
	t.Setenv("LAB_CACHE", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "127.0.0.1:11434"}, "--upstream"},
		{[]string{"--upstream", "ftp://127.0.0.1:9"}, "--upstream"},
		{[]string{"--upstream", "http://"}, "--upstream"},
		{[]string{"--upstream", "http://127.0.0.1:9", "--num-ctx", "-5"}, "--num-ctx"},
		{[]string{"--upstream", "http://127.0.0.1:9", "--label", "../x"}, "--label"},
		{[]string{"--upstream", "http://127.0.0.1:9", "--label", "a\nb"}, "--label"},
		{[]string{"--upstream", "http://127.0.0.1:9", "--max-request-bytes", "-5"}, "--max-request-bytes"},
		{[]string{"--upstream", "http://127.0.0.1:9", "--max-reply-bytes", "-1"}, "--max-reply-bytes"},
	} {
		args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--results", t.TempDir(), "--run-id", "x"}, tc.args...)
		// A cancelled context: a proxy that accepted the flags stops at once (exit 0).
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb bytes.Buffer
		code, stderr := run(ctx, args, &out, &errb), errb.String()
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want %d and %q", strings.Join(args, " "), code, stderr, exitBadInput, tc.want)
		}
	}
}
