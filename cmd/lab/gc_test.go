package main

import (
	"runtime/debug"
	"testing"
)

// lab run and lab check run with the session GC settings unless the user set $GOGC or
// $GOMEMLIMIT; other commands keep Go's.
func TestTuneGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		percent int
		limit   int64
	}{
		{[]string{"run", "--backend", "sim"}, nil, sessionGCPercent, sessionMemoryLimit},
		{[]string{"check", "checks/ci.yaml"}, nil, sessionGCPercent, sessionMemoryLimit},
		{[]string{"proxy"}, nil, 100, 1 << 40},
		{[]string{"run"}, map[string]string{"GOGC": "100"}, 100, 1 << 40},
		{[]string{"run"}, map[string]string{"GOMEMLIMIT": "1GiB"}, 100, 1 << 40},
		{nil, nil, 100, 1 << 40},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(1 << 40)
		tuneGC(tc.args, func(k string) string { return tc.env[k] })
		percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
		if percent != tc.percent || limit != tc.limit {
			t.Errorf("%v with %v: GOGC %d, memory limit %d; want %d, %d", tc.args, tc.env, percent, limit, tc.percent, tc.limit)
		}
	}
}
