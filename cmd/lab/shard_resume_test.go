package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/metrics"
)

// lab run --shard 2/2 interrupted says how to carry on that shard; lab run --resume DIR --shard
// 2/2 reruns it alone (shard 1/2's part is untouched) and the run is then whole. Without --shard,
// --resume of a split run is bad input naming the shards to choose from.
func TestResumeOneShard(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	args := []string{"run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec,date-in-system-prompt",
		"--repeat", "2", "--results", results, "--run-id", "sh"}
	if code, _, errOut := runLab(t, append(args, "--shard", "1/2", "--quiet")...); code != exitOK {
		t.Fatalf("shard 1/2: exit %d: %s", code, errOut)
	}
	dir := metrics.RunDir(results, "sh")
	part1, err := os.ReadFile(filepath.Join(dir, metrics.PartFile(metrics.Shard{Index: 1, Count: 2})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	code := run(ctx, append(args, "--shard", "2/2", "--progress", "requests"), &out, &cancelAfter{n: 60, cancel: cancel})
	if code != exitError || !strings.Contains(out.String(), "--resume "+dir+" --shard 2/2") {
		t.Fatalf("interrupted shard 2/2: exit %d; stdout %s", code, out.String())
	}
	code, _, errOut := runLab(t, "run", "--resume", dir, "--quiet")
	if code != exitBadInput || !strings.Contains(errOut, "--shard") || !strings.Contains(errOut, "2/2") {
		t.Errorf("--resume of a split run without --shard: exit %d, %s", code, errOut)
	}
	code, stdout, errOut := runLab(t, "run", "--resume", dir, "--shard", "2/2", "--quiet")
	if code != exitOK {
		t.Fatalf("resume of shard 2/2: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, metrics.PartFile(metrics.Shard{Index: 1, Count: 2}))); !slices.Equal(again, part1) {
		t.Error("resuming shard 2/2 rewrote shard 1/2's part")
	}
	man, got, err := metrics.ReadRun(dir)
	if err != nil || !man.Complete || len(got) != 4*48 {
		t.Fatalf("after the resume: %v, complete %v (%q), %d rows; want 192", err, man.Complete, man.Error, len(got))
	}
	code, _, errOut = runLab(t, "run", "--resume", dir, "--shard", "2/2", "--quiet")
	if code != exitBadInput || !strings.Contains(errOut, "nothing to resume") {
		t.Errorf("resume of a complete shard: exit %d, %s", code, errOut)
	}
}
