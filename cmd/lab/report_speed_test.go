package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	labmetrics "lab/metrics"
)

// The targets lab report is held to: a generated run of reportTargetRows rows reported (report.md,
// report.html and the charts) in under reportTargetSeconds of wall time and reportTargetMB of
// peak resident memory, as a process of its own; and a glob of reportGlobRuns runs read without
// reading any part twice.
const (
	reportTargetRows    = 100_000
	reportTargetSeconds = 5.0
	reportTargetMB      = 500.0
	reportGlobRuns      = 100
)

// labBinary returns the lab binary the benchmarks run as a child process: LAB_BIN when set (go
// build -o bin/lab ./cmd/lab), else this package built into a temporary folder.
func labBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("LAB_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			b.Fatal(err)
		}
		return abs
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(b.TempDir(), "lab")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build -o %s ./cmd/lab: %v\n%s", bin, err, out)
	}
	return bin
}

// reportChild runs `lab report --out OUT args...` as a child process and returns its wall time in
// seconds (from start to exit, as a user waits for it), the CPU time it used (user and system,
// seconds: what a busy machine does not stretch) and its peak resident set in MB (the kernel's
// maxrss of the child, 1 MB = 2^20 bytes).
func reportChild(b *testing.B, bin string, args ...string) (seconds, cpu, mb float64) {
	b.Helper()
	cmd := exec.Command(bin, append([]string{"report", "--png", "--out", b.TempDir()}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	seconds = time.Since(start).Seconds()
	if err != nil {
		b.Fatalf("%s report: %v\n%s", bin, err, out.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatalf("no resource usage of the child on %s", runtime.GOOS)
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return seconds, cpu, float64(ru.Maxrss) * 1024 / (1 << 20) // Linux reports maxrss in KiB
}

// BenchmarkReportSpeed runs `lab report` as a child process (LAB_BIN, or this package built into
// a temporary folder) over a generated run of 100,000 rows (writeSyntheticRun) and over a glob
// of 100 generated runs of 1,000 rows each ('results/run_id=*'), and reports per report its wall
// time (wall-s) and peak resident set (peak-RSS-MB), each with its ratio to the target: wall/5s
// and RSS/500MB, below 1 when lab report meets it; and its CPU time (cpu-s, user and system),
// which a machine busy with other work stretches less than the wall time. Each figure is the
// mean over b.N reports. For the glob it also reports the runs in process watching what is read
// (globReads): the most opens of any manifest or part (max-opens/file) and the bytes read of
// them per byte they hold (bytes-read/byte), both 1 when each is read once. LAB_BIN is an absolute path or one relative to cmd/lab.
//
//	go test -run '^$' -bench BenchmarkReportSpeed -benchtime 3x ./cmd/lab/
func BenchmarkReportSpeed(b *testing.B) {
	bin := labBinary(b)
	cases := []struct {
		name string
		args func(b *testing.B) []string
		glob bool // the args are one glob pattern
	}{
		{fmt.Sprintf("rows=%d", reportTargetRows), func(b *testing.B) []string {
			return []string{writeSyntheticRun(b, b.TempDir(), reportTargetRows)}
		}, false},
		{fmt.Sprintf("runs=%d", reportGlobRuns), func(b *testing.B) []string {
			results := b.TempDir()
			for i := range reportGlobRuns {
				writeSyntheticRunOf(b, results, fmt.Sprintf("r%03d", i), reportTargetRows/reportGlobRuns, 1)
			}
			return []string{filepath.Join(results, labmetrics.RunDirPrefix+"*")}
		}, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			args := c.args(b)
			var wall, cpu, rss float64
			b.ResetTimer()
			for range b.N {
				s, c, mb := reportChild(b, bin, args...)
				wall += s
				cpu += c
				rss += mb
			}
			b.StopTimer()
			wall /= float64(b.N)
			cpu /= float64(b.N)
			rss /= float64(b.N)
			b.ReportMetric(wall, "wall-s")
			b.ReportMetric(wall/reportTargetSeconds, "wall/5s")
			b.ReportMetric(cpu, "cpu-s")
			b.ReportMetric(rss, "peak-RSS-MB")
			b.ReportMetric(rss/reportTargetMB, "RSS/500MB")
			if c.glob {
				opens, read := globReads(b, args[0])
				b.ReportMetric(opens, "max-opens/file")
				b.ReportMetric(read, "bytes-read/byte")
			}
		})
	}
}

// globReads reports the runs that pattern names as lab report does, in process, watching its
// reads of the folder the pattern is in (metrics.WatchReads), and returns the most times any
// manifest or part was opened and the bytes read of them divided by their size: both 1 when
// each is read once, whole.
func globReads(b *testing.B, pattern string) (maxOpens, perByte float64) {
	b.Helper()
	stats := labmetrics.WatchReads(filepath.Dir(pattern))
	dirs, err := expandRuns([]string{pattern}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	mans, all, lost, err := loadRuns(dirs, io.Discard)
	if err != nil || lost != nil {
		b.Fatal(err, lost)
	}
	if _, err := writeReportFiles(b.TempDir(), mans, all, true); err != nil {
		b.Fatal(err)
	}
	stats.Stop()
	var read, size int64
	for name, f := range stats.Files() {
		if !runFileRE.MatchString(path.Base(name)) {
			continue
		}
		maxOpens = max(maxOpens, float64(f.Opens))
		read += f.Bytes
		size += f.Size
	}
	return maxOpens, float64(read) / float64(size)
}

// runFileRE matches the data files of a run folder that lab report reads: the part manifests and
// the part files.
var runFileRE = regexp.MustCompile(`^(manifest-\d+-of-\d+\.json|part-\d+-of-\d+\.parquet)$`)

// A glob of 100 runs is reported reading each run's manifests and parts once: every part file
// and every manifest opened exactly once and each of its bytes read exactly once, and no other
// file of the results folder read. Some runs are split into shards, so that a run's parts are
// several files.
func TestReportGlobReadsEachPartOnce(t *testing.T) {
	results := t.TempDir()
	rows, parts := 0, 0
	for i := range reportGlobRuns {
		shards := 1 + i%3 // 1, 2 or 3 parts
		n := 40 + i
		writeSyntheticRunOf(t, results, fmt.Sprintf("r%03d", i), n, shards)
		rows, parts = rows+n, parts+shards
	}
	want := map[string]int64{} // every manifest and part, with its size
	runs, err := filepath.Glob(filepath.Join(results, labmetrics.RunDirPrefix+"*"))
	if err != nil || len(runs) != reportGlobRuns {
		t.Fatalf("%d run folders written (%v); want %d", len(runs), err, reportGlobRuns)
	}
	for _, run := range runs {
		ents, err := os.ReadDir(run)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if runFileRE.MatchString(e.Name()) {
				info, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				want[filepath.Base(run)+"/"+e.Name()] = info.Size()
			}
		}
	}
	if len(want) != 2*parts {
		t.Fatalf("%d manifests and parts written; want %d of %d parts", len(want), 2*parts, parts)
	}

	stats := labmetrics.WatchReads(results)
	dirs, err := expandRuns([]string{filepath.Join(results, labmetrics.RunDirPrefix+"*")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	mans, all, lost, err := loadRuns(dirs, io.Discard)
	if err != nil || lost != nil {
		t.Fatal(err, lost)
	}
	if _, err := writeReportFiles(t.TempDir(), mans, all, true); err != nil {
		t.Fatal(err)
	}
	stats.Stop()
	if len(mans) != reportGlobRuns || all.Len() != rows {
		t.Fatalf("read %d runs of %d rows; want %d of %d", len(mans), all.Len(), reportGlobRuns, rows)
	}

	got := stats.Files()
	for name, size := range want {
		f, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: never read", name)
		case f.Opens != 1 || f.Twice != 0 || f.Bytes != size:
			t.Errorf("%s: opened %d times, %d bytes read of %d, %d of them more than once; want 1 open and each byte read once", name, f.Opens, f.Bytes, size, f.Twice)
		}
	}
	for name, f := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: read (%+v), though it is no manifest or part", name, f)
		}
	}
}
