package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
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

// startAllocProfile creates, when $LAB_MEMPROFILE names a file, that file at once and returns a
// function that writes into it the allocation profile of the whole command (runtime/pprof
// "allocs": every allocation since the start, by bytes and count, for `go tool pprof
// -sample_index=alloc_space`, and the live heap at the end: the function collects first, since
// the profile's live heap is the one of the last completed collection). The rate is Go's default
// (one sample per 512 KiB allocated). An unwritable file is reported on stderr before the
// command runs, which then runs without the profile; a failed write at the end is reported
// too. The command's outcome is not changed.
func startAllocProfile(getenv func(string) string, stderr io.Writer) (write func()) {
	path := getenv("LAB_MEMPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "lab: LAB_MEMPROFILE: %v (running without an allocation profile)\n", err)
		return func() {}
	}
	return func() {
		runtime.GC()
		err := pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "lab: LAB_MEMPROFILE %s: %v\n", path, err)
		}
	}
}
