package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile of the whole command into the file named by
// $LAB_CPUPROFILE (for `go tool pprof`), when it is set; the returned function stops it and
// closes the file. The profile shows where the lab's own time goes in a run, next to the
// server's prefill: the lab process only, not the servers it starts. An unwritable file is
// reported on stderr and the command runs without a profile.
func startCPUProfile(getenv func(string) string, stderr io.Writer) (stop func()) {
	path := getenv("LAB_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "lab: LAB_CPUPROFILE: %v (running without a profile)\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "lab: LAB_CPUPROFILE %s: %v (running without a profile)\n", path, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "lab: LAB_CPUPROFILE %s: %v\n", path, err)
		}
	}
}

// startTrace starts an execution trace of the whole command (runtime/trace, for `go tool
// trace`: goroutine scheduling latency, garbage collection pauses, system calls) into the file
// named by $LAB_TRACE, when it is set; the returned function stops it and closes the file. An
// unwritable file is reported on stderr and the command runs without a trace.
func startTrace(getenv func(string) string, stderr io.Writer) (stop func()) {
	path := getenv("LAB_TRACE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "lab: LAB_TRACE: %v (running without a trace)\n", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(stderr, "lab: LAB_TRACE %s: %v (running without a trace)\n", path, err)
		f.Close()
		return func() {}
	}
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "lab: LAB_TRACE %s: %v\n", path, err)
		}
	}
}
