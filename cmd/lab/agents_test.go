package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/agents"
)

// lab agents refuses bad flags before it installs or starts anything.
func TestAgentsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agents", "--agent", "aider"}, "unknown agent aider"},
		{[]string{"agents", "--proxy", "http://0.0.0.0:8081"}, "--proxy"},
		{[]string{"agents", "--proxy", "ftp://127.0.0.1:1"}, "--proxy"},
		{[]string{"agents", "--turn-timeout", "0s"}, "--turn-timeout"},
	} {
		code, _, stderr := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, exitBadInput, tc.want)
		}
	}
}

// With --proxy, lab agents drives the agent already in the cache (no npm) against that URL and
// writes agents.json and the table.
func TestAgentsWithProxyUsesTheCache(t *testing.T) {
	cache := t.TempDir()
	var codex agents.Agent
	for _, a := range agents.All() {
		if a.Name == "codex" {
			codex = a
		}
	}
	bin := filepath.Join(cache, "agents", codex.DirName(), "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, codex.Bin), []byte("#!/bin/sh\necho \"$CODEX_HOME $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no npm: an install would fail
	run := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runLab(t, "agents", "--agent", "codex", "--proxy", "http://127.0.0.1:9", "--cache", cache, "--run", run)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stderr, "codex: turn 3/3 (resumed): exit 0") || !strings.Contains(stdout, "codex  0.171.0") {
		t.Fatalf("stdout %s\nstderr %s", stdout, stderr)
	}
	var rs []agents.Result
	b, _ := os.ReadFile(filepath.Join(run, "agents.json"))
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 1 || rs[0].Error != "" || !rs[0].InstallReused || len(rs[0].Turns) != 3 {
		t.Fatalf("agents.json %s (%v)", b, err)
	}
	out, _ := os.ReadFile(filepath.Join(run, "codex", "turn-2.stdout"))
	if !strings.Contains(string(out), filepath.Join(run, "codex", "home", ".codex")+" exec --skip-git-repo-check -s workspace-write resume --last") {
		t.Fatalf("turn 2 ran %q: want codex's resume command with its scratch CODEX_HOME", out)
	}
	cfg, _ := os.ReadFile(filepath.Join(run, "codex", "home", ".codex", "config.toml"))
	if !strings.Contains(string(cfg), `base_url = "http://127.0.0.1:`) || !strings.Contains(string(cfg), "check_for_update_on_startup = false") {
		t.Fatalf("config.toml:\n%s", cfg)
	}
	md, err := os.ReadFile(filepath.Join(run, "agents.md"))
	if err != nil || !strings.Contains(string(md), "| codex | 0.171.0 | 0 |") || !strings.Contains(string(md), "recorded by the --proxy given") {
		t.Fatalf("agents.md (%v):\n%s", err, md)
	}
}
