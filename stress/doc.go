// Package stress holds the lab's load and size scenarios, run by `make stress` (go test -tags
// stress -timeout 30m -v ./stress/): each starts the real bin/lab as a child process against
// loopback fake servers (127.0.0.1 only), bounds it in time, and measures what the binary does:
// rows lost when `lab proxy` or `lab run` is killed (SIGKILL) or stopped (SIGINT) under load,
// how long an answered request waits for its row in the journal, secrets found in anything the
// lab wrote, the peak memory (the child's maximum resident set size, getrusage ru_maxrss) of
// `lab run`, `lab proxy` and `lab report` by size, and whether a run whose tools meet a named
// pipe ends. The scenarios print one table of figures and write it as JSON (see figures in
// stress_test.go); a scenario fails when a guarantee breaks (a row lost, a secret found, a
// child that does not end in its bound, memory past a generous per-size bound). The files are
// built only with the stress tag, so `go test ./...` leaves them out.
package stress
