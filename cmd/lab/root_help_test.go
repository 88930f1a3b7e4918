package main

import (
	"strings"
	"testing"
)

// The root help names where a run's rows go as the results layout has them: Parquet parts in
// results/run_id=<run-id>/, not the old layout's samples.parquet.
func TestRootHelpNamesTheRunFolder(t *testing.T) {
	code, out, _ := runLab(t, "--help")
	if code != 0 {
		t.Fatalf("lab --help exits %d", code)
	}
	if strings.Contains(out, "samples.parquet") || !strings.Contains(out, "results/run_id=<run-id>/") {
		t.Errorf("lab --help says where rows go as:\n%s\nwant results/run_id=<run-id>/, not samples.parquet", out)
	}
}
