// Command bench-sim-matrix compares two builds of bin/lab on the sim matrix (`lab run --backend
// sim --scenario all --arm all --quiet`, every scenario under every arm): it runs the two
// binaries alternately, -n runs each (the order swapped every round, so that a machine getting
// busier or quieter weighs on both alike), measures each run's CPU time (user and system, the
// child's rusage) and wall time, and prints every run, the medians with their spread (min–max)
// and the ratios new/old of the medians, CPU first: the figure the sim matrix's speed is judged
// by. It checks that every run wrote the same rows as the first run of the old binary, column for
// column but run_id, started_at and the durations (internal/rowdigest, divergence excerpt
// included), and exits 1 when one did not. scripts/bench-sim-matrix.sh builds the two binaries
// from git revisions; `make bench` runs it.
//
//	go run ./scripts/bench-sim-matrix -old OLD_BIN -new NEW_BIN [-n 5] [-target 0.25]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lab/internal/rowdigest"
	"lab/metrics"
)

func main() {
	oldBin := flag.String("old", "", "the binary of the base revision (required)")
	newBin := flag.String("new", "", "the binary of the revision measured (required)")
	n := flag.Int("n", 5, "runs of each binary")
	target := flag.Float64("target", 0.25, "the CPU ratio new/old the new build is judged against")
	flag.Parse()
	if *oldBin == "" || *newBin == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: bench-sim-matrix -old OLD_BIN -new NEW_BIN [-n 5] [-target 0.25]")
		os.Exit(2)
	}
	if err := compare(*oldBin, *newBin, *n, *target); err != nil {
		fmt.Fprintln(os.Stderr, "bench-sim-matrix:", err)
		os.Exit(1)
	}
}

// run is one run's figures, in seconds.
type run struct {
	cpu, wall float64
}

func compare(oldBin, newBin string, n int, target float64) error {
	tmp, err := os.MkdirTemp("", "bench-sim-matrix-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bins := [2]string{oldBin, newBin}
	names := [2]string{"old", "new"}
	var runs [2][]run
	var want []byte
	for i := range n {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, b := range order {
			r, digest, err := once(bins[b], filepath.Join(tmp, fmt.Sprintf("%s-%d", names[b], i+1)))
			if err != nil {
				return fmt.Errorf("%s run %d (%s): %w", names[b], i+1, bins[b], err)
			}
			if want == nil { // round 1 runs the old binary first: its rows are the reference
				want = digest
			}
			if !bytes.Equal(digest, want) {
				if only := scenariosOnlyIn(digest, want); only != "" {
					return fmt.Errorf("the two builds run other scenarios (%s only in the %s build): compare like with like, a build of one side without them (OLD_BIN, NEW_BIN) or revisions with the same scenarios", only, names[b])
				}
				if only := scenariosOnlyIn(want, digest); only != "" {
					return fmt.Errorf("the two builds run other scenarios (%s only in the old build): compare like with like, a build of one side without them (OLD_BIN, NEW_BIN) or revisions with the same scenarios", only)
				}
				return fmt.Errorf("%s run %d wrote other rows than old run 1:\n%s", names[b], i+1, firstDiff(want, digest))
			}
			runs[b] = append(runs[b], r)
			fmt.Printf("%s run %d: cpu %.2f s, wall %.2f s\n", names[b], i+1, r.cpu, r.wall)
		}
	}
	med := func(rs []run, f func(run) float64) (m, lo, hi float64) {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		m = v[len(v)/2]
		if len(v)%2 == 0 {
			m = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return m, v[0], v[len(v)-1]
	}
	cpu := func(r run) float64 { return r.cpu }
	wall := func(r run) float64 { return r.wall }
	fmt.Printf("\nrows: all %d runs wrote the same rows (run_id, started_at and durations aside)\n", 2*n)
	var mc, mw [2]float64
	for b := range 2 {
		c, clo, chi := med(runs[b], cpu)
		w, wlo, whi := med(runs[b], wall)
		mc[b], mw[b] = c, w
		fmt.Printf("%s (%s): median cpu %.2f s (%.2f–%.2f), median wall %.2f s (%.2f–%.2f), %d runs\n", names[b], bins[b], c, clo, chi, w, wlo, whi, n)
	}
	verdict := "met"
	if mc[1]/mc[0] > target {
		verdict = "not met"
	}
	fmt.Printf("ratio new/old: cpu %.3f (target ≤ %.2f: %s), wall %.3f\n", mc[1]/mc[0], target, verdict, mw[1]/mw[0])
	return nil
}

// scenariosOnlyIn names, comma-separated, the scenarios that digest a holds and b does not (each
// digest line starts with the session's scenario); "" when none.
func scenariosOnlyIn(a, b []byte) string {
	set := func(d []byte) map[string]bool {
		m := map[string]bool{}
		for line := range bytes.Lines(d) {
			if f := bytes.Fields(line); len(f) > 0 {
				m[string(f[0])] = true
			}
		}
		return m
	}
	sa, sb := set(a), set(b)
	var only []string
	for sc := range sa {
		if !sb[sc] {
			only = append(only, sc)
		}
	}
	slices.Sort(only)
	return strings.Join(only, ", ")
}

// once runs bin on the sim matrix with its results in dir and returns its figures and the
// digest of its rows.
func once(bin, dir string) (run, []byte, error) {
	cmd := exec.Command(bin, "run", "--backend", "sim", "--scenario", "all", "--arm", "all", "--quiet", "--results", dir, "--run-id", "matrix")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return run{}, nil, fmt.Errorf("%w\n%s", err, stderr.Bytes())
	}
	r := run{wall: time.Since(start).Seconds(), cpu: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	parts, err := filepath.Glob(filepath.Join(metrics.RunDir(dir, "matrix"), "part-*.parquet"))
	if err != nil || len(parts) != 1 {
		return r, nil, fmt.Errorf("parts %v (%v): want one", parts, err)
	}
	samples, _, err := metrics.ReadSamples(parts[0])
	if err != nil {
		return r, nil, err
	}
	digest, err := rowdigest.Sessions(samples, true)
	if err != nil {
		return r, nil, err
	}
	return r, digest, os.RemoveAll(dir)
}

// firstDiff returns the first line where two digests differ, each side's.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("- %s\n+ %s", x, y)
		}
	}
	return ""
}
