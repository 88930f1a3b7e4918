package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/agents"
	"lab/gguf"
	"lab/localserver"
	"lab/transcript"
)

// The session files real agents write, read back: lab agents --scripted drives Claude Code and
// Codex (installed in the lab's cache) through the scripted session on lab server start's
// server, and each agent's own session file in its scratch home (Claude Code's under
// .claude/projects/, Codex's rollout under .codex/sessions/) reads into a Session: the
// scripted session's three user turns, replies with usage, every call with its result, the
// agent's tools mapped onto the lab's, and no absolute path of the scratch run left anywhere.
// Skipped with -short, and for an agent not installed in the cache (lab agents installs it).
func TestTranscriptsOfRealAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real coding agents against lab server start's Ollama; skipped with -short")
	}
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	var names []string
	for _, a := range agents.All() {
		if a.Name != "claude" && a.Name != "codex" {
			continue
		}
		if _, err := os.Stat(filepath.Join(cache, "agents", a.DirName(), "node_modules", ".bin", a.Bin)); err != nil {
			t.Logf("%s is not installed in %s (lab agents --agent %s installs it): not read", a.Spec(), cache, a.Name)
			continue
		}
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		t.Skip("neither Claude Code nor Codex is installed in the lab's cache (lab agents --agent claude,codex installs them)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sh, err := localserver.StartShared(ctx, localserver.ServerOptions{Setup: setup(cache, false, gguf.DefaultModelOptions(), localserver.DefaultModelName, io.Discard)}, localserver.KindOllama)
	if err != nil {
		t.Fatalf("lab server start: %v", err)
	}
	if !sh.Already {
		t.Cleanup(func() { localserver.StopShared(context.Background(), cache, []string{localserver.KindOllama}) })
	}
	run := filepath.Join(t.TempDir(), "run")
	var out, errb strings.Builder
	s := &streams{out: &out, err: &errb, getenv: os.Getenv, started: true}
	err = runAgents(ctx, s, &agentsOptions{Agents: names, RunDir: run, RunID: "agents-transcripts",
		Model: localserver.DefaultModelName, CacheDir: cache, TurnTimeout: 4 * time.Minute, Scripted: true})
	if err != nil {
		t.Fatalf("lab agents --scripted: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			pattern := filepath.Join(run, name, "home", ".claude", "projects", "*", "*.jsonl")
			format := transcript.FormatClaudeCode
			if name == "codex" {
				pattern = filepath.Join(run, name, "home", ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")
				format = transcript.FormatCodex
			}
			files, _ := filepath.Glob(pattern)
			if len(files) != 1 {
				t.Fatalf("%s: %d session files (%v), want the one the three turns share", pattern, len(files), files)
			}
			sess, err := transcript.Read(files[0])
			if err != nil {
				t.Fatal(err)
			}
			checkRealSession(t, sess, format, run)
		})
	}
}

// checkRealSession checks a session read from a real agent's file of the scripted session.
func checkRealSession(t *testing.T, s *transcript.Session, format, run string) {
	t.Helper()
	if s.Format != format || s.Project != "project" || s.Model != localserver.DefaultModelName || s.Agent == "" {
		t.Errorf("format %q project %q model %q agent %q", s.Format, s.Project, s.Model, s.Agent)
	}
	users, steps, calls := 0, 0, 0
	tools := map[string]int{}
	var last time.Time
	for _, e := range s.Events {
		if e.Time.IsZero() || e.Time.Before(last) {
			t.Errorf("line %d: time %v after %v", e.Line, e.Time, last)
		}
		last = e.Time
		switch {
		case e.User != nil:
			users++
		case e.Assistant != nil:
			steps++
			if e.Assistant.Usage == nil || e.Assistant.Usage.InputTokens == nil || *e.Assistant.Usage.InputTokens == 0 {
				t.Errorf("line %d: reply without usage", e.Line)
			}
			for _, c := range e.Assistant.Calls {
				calls++
				tools[c.Tool]++
				if !c.HasResult || c.ResultLine <= e.Line {
					t.Errorf("line %d: call %s %s without its result (line %d)", e.Line, c.Name, c.Args, c.ResultLine)
				}
			}
		}
	}
	if users != 3 || steps < 6 || calls < 5 {
		t.Errorf("%d user turns, %d replies, %d calls: want the scripted session's 3 turns and its tool loop", users, steps, calls)
	}
	if tools[""] > 0 || tools["bash"] == 0 {
		t.Errorf("lab tools of the calls %v: want every call mapped, bash among them", tools)
	}
	if format == transcript.FormatClaudeCode && (tools["read"] == 0 || tools["edit"] == 0) {
		t.Errorf("Claude Code's calls map to %v: want read and edit among them", tools)
	}
	s.File = ""
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), run) || strings.Contains(string(b), filepath.Dir(run)) {
		t.Errorf("the run's absolute path survives in the session")
	}
	t.Logf("%s: %d events, %d skipped lines, calls by lab tool %v", s.Agent, len(s.Events), len(s.Skipped), tools)
}
