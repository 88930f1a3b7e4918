package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"lab"
	"lab/agents"
	"lab/capture"
	"lab/chat"
	"lab/hygiene"
	"lab/localserver"
	"lab/metrics"
	"lab/report"
	"lab/scenario"
	"lab/scorecard"
	"lab/scriptmodel"
	"lab/tokenizer"
)

// agentsOptions are `lab agents`'s flags.
type agentsOptions struct {
	// Agents are the --agent names (all of agents.json for none).
	Agents []string
	// Proxy is the base URL of a running lab proxy; "" starts one per agent in front of the
	// server lab server start left running.
	Proxy      string
	RunDir     string
	ResultsDir string
	RunID      string
	Model      string
	CacheDir   string
	// TurnTimeout limits each turn's child process.
	TurnTimeout time.Duration
	// Scripted is --scripted: the agents talk to the lab's scripted model (the built-in script
	// unless Script names one); Script is --script FILE.
	Scripted bool
	Script   string
}

func newAgentsCmd(s *streams) *cobra.Command {
	o := &agentsOptions{}
	c := &cobra.Command{
		Use:   "agents",
		Short: "Install real coding agents and drive a scripted session through each, via lab proxy",
		Long: `agents installs pinned versions of real coding agents (Codex, Claude Code, opencode,
Qwen Code, pi: the agents' table is lab's agents/agents.json) with npm into the lab's cache, gives
each a scratch HOME and project with dummy keys, telemetry and auto-update off, and drives the
same scripted session through it: three user turns, the second and third resuming the first's
session, each a child process with a time limit (--turn-timeout).

Without --proxy, each agent gets a lab proxy of its own (in this process) in front of the server
lab server start left running, recording into <run>/<agent>/capture/ (its request bodies
included). With --proxy, every agent talks to that running lab proxy instead.

Nothing leaves loopback: the agents' HTTP(S)_PROXY is a listener that refuses every request and
writes where it was going into <run>/<agent>/outside.jsonl; <run>/<agent>/wire.jsonl has the
method, path and headers (secrets redacted) of each request the agent sent; the turns' output is
in turn-N.stdout and .stderr; <run>/agents.json sums it all up, and <run>/agents.md compares the
agents: per request, where it first diverged from the previous one of its conversation (segment
and an excerpt of both bodies), tokens re-read, cached share and cache efficiency, and each
agent's hygiene scorecard (spec 3.2.0's rules as its requests show them: kept, broken at which
request and for how many tokens, or not seen). An agent that cannot be installed or started is an
error row; the others still run.

With --scripted (or --script FILE) the agents talk to the lab's scripted model instead of the
served model's own words: it answers each request with the script's next step in the agent's own
API (a tool call mapped onto the agent's own tools, or the turn's answer) while the real server
prefills every prompt, so each agent runs the same tool loop on its scratch project. The script's
clock crosses midnight between turns (each turn's time zone is set). After the agents, the lab's
own harness runs the same session with the spec arm on the same server (<run>/run_id=lab-spec/),
the reference row of the agents' table and scorecard.`,
		Example: `  lab server start && lab agents
  lab agents --agent codex,claude
  lab agents --scripted
  lab agents --proxy http://127.0.0.1:8081`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgents(cmd.Context(), s, o)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.Agents, "agent", nil, "the agents to run, comma-separated (default: all of them)")
	f.StringVar(&o.Proxy, "proxy", "", "the base URL of a running lab proxy, such as http://127.0.0.1:8081 (default: a lab proxy per agent in front of lab server start's server)")
	f.StringVar(&o.RunDir, "run", "", "the run folder (default: <results>/run_id=agents-<time>)")
	f.StringVar(&o.ResultsDir, "results", "results", "folder that receives run_id=<run-id>/")
	f.StringVar(&o.RunID, "run-id", "", "the run id (default: agents-YYYYMMDD-HHMMSS)")
	f.StringVar(&o.Model, "model", localserver.DefaultModelName, "the model name every agent asks for")
	f.StringVar(&o.CacheDir, "cache", "", "the lab's cache folder (default $LAB_CACHE or ~/.cache/lab)")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", agents.DefaultTurnTimeout, "how long one turn may run before its process is killed")
	f.BoolVar(&o.Scripted, "scripted", false, "answer the agents with the lab's scripted model (real tool loops from a script; the real server still prefills every prompt) instead of the served model's own generation")
	f.StringVar(&o.Script, "script", "", "the script the scripted model follows, a YAML file (implies --scripted; default: the built-in script)")
	return c
}

func runAgents(ctx context.Context, s *streams, o *agentsOptions) error {
	list, err := agents.Select(o.Agents)
	if err != nil {
		return badInput("--agent: %v", err)
	}
	if o.TurnTimeout <= 0 {
		return badInput("--turn-timeout %s: want a positive duration", o.TurnTimeout)
	}
	if o.Model == "" {
		return badInput("--model: want a model name")
	}
	cache, err := cacheDir(s, o.CacheDir)
	if err != nil {
		return err
	}
	runID := o.RunID
	if runID == "" {
		runID = "agents-" + time.Now().Format("20060102-150405")
	}
	if err := metrics.CheckRunID(runID); err != nil {
		return badInput("--run-id: %v", err)
	}
	dir := o.RunDir
	if dir == "" {
		dir = metrics.RunDir(o.ResultsDir, runID)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return badInput("--run %s: the folder exists and is not empty", dir)
	}
	// Absolute: each agent runs in its project folder, and its HOME and config paths must
	// still name the run folder from there.
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	var script *scriptmodel.Script
	var turns []agents.Turn
	midnight := 0
	var project map[string]string
	if o.Scripted || o.Script != "" {
		if o.Proxy != "" {
			return badInput("--scripted: the scripted model runs behind lab agents' own proxy; drop --proxy")
		}
		if o.Script != "" {
			script, err = scriptmodel.LoadScript(o.Script)
		} else {
			script = scriptmodel.DefaultScript()
		}
		if err != nil {
			return badInput("--script: %v", err)
		}
		for i, t := range script.Turns {
			turns = append(turns, agents.Turn{Prompt: t.User, Resume: i > 0})
		}
		project = scriptmodel.DefaultWorkspace()
		midnight = script.Midnight
	}
	// The served model's tokenizer, loaded once: the scripted model's reply counts and the
	// scorecard's costs.
	count := servedTokenCounter(cache)
	var endpoint agents.Endpoint
	if o.Proxy != "" {
		u, err := url.Parse(o.Proxy)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return badInput("--proxy %q: want http://host:port of a running lab proxy", o.Proxy)
		}
		if err := capture.CheckLoopback(u.Host); err != nil {
			return badInput("--proxy: %v", err)
		}
		base := strings.TrimSuffix(o.Proxy, "/")
		endpoint = func(context.Context, agents.Agent, string) (string, func() error, error) {
			return base, func() error { return nil }, nil
		}
	} else {
		srv, err := localserver.Attach(ctx, sharedServerDir(cache))
		if err != nil {
			return fmt.Errorf("lab agents needs lab server start's server running, or --proxy: %w", err)
		}
		endpoint = inProcessProxy(s, srv.URL, cache, runID, o.Model, script, count)
	}
	fmt.Fprintf(s.err, "lab agents: %d agents into %s\n", len(list), dir)
	results, err := agents.Run(ctx, agents.Options{
		Agents: list, CacheDir: cache, RunDir: dir, Endpoint: endpoint, Model: o.Model,
		TurnTimeout: o.TurnTimeout, Progress: s.err, Turns: turns, Project: project, Midnight: midnight,
	})
	printAgents(s, dir, results)
	var facts scorecard.Facts
	var ref *report.AgentRun
	if script != nil {
		facts = script.Facts(project)
		if ctx.Err() == nil {
			ref = referenceRun(ctx, s, script, project, cache, dir)
		}
	}
	if werr := writeAgentsReport(s, dir, results, o.Proxy != "", script, facts, count, ref); werr != nil && err == nil {
		err = werr
	}
	return err
}

// writeAgentsReport writes <dir>/agents.md, the report comparing the agents
// ([report.WriteAgentsReport]) over each agent's capture (<agent dir>/capture/), with each
// agent's hygiene scorecard ([scorecard.Score], with the script's facts and count, nil for
// none, counting tokens). With an outside proxy (external) the lab has no capture of its own:
// each agent's line says so.
func writeAgentsReport(s *streams, dir string, rs []agents.Result, external bool, script *scriptmodel.Script, facts scorecard.Facts, count func(string) (int, error), ref *report.AgentRun) error {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		return err
	}
	runs := make([]report.AgentRun, 0, len(rs)+1)
	score := func(run *report.AgentRun, decode scorecard.Decoder, absolute ...string) {
		reqs, skipped, err := scorecard.Session(run.Rows, run.Bodies, decode)
		if err != nil {
			run.ScorecardError = err.Error()
			return
		}
		run.Scorecard = scorecard.Score(scorecard.Input{Requests: reqs, Facts: facts, Config: loop, CountTokens: count, Absolute: absolute})
		for _, sk := range skipped {
			fmt.Fprintf(s.err, "%s: scorecard: left out %s\n", run.Agent, sk)
		}
	}
	if ref != nil {
		if ref.Error == "" {
			home, _ := os.UserHomeDir()
			score(ref, harnessBodies, dir, home)
		}
		runs = append(runs, *ref)
	}
	for _, r := range rs {
		run := report.AgentRun{Agent: r.Agent, Version: r.Version, Error: r.Error}
		switch {
		case run.Error != "":
		case external:
			run.Error = "recorded by the --proxy given, not by lab agents"
		default:
			rows, bodies, err := report.LoadAgentCapture(filepath.Join(r.Dir, "capture"))
			if err != nil {
				run.Error = "read its capture: " + err.Error()
				break
			}
			run.Rows, run.Bodies = rows, bodies
			if script != nil {
				scriptProgress(&run, script, filepath.Join(r.Dir, "scripted-model.jsonl"))
			}
			score(&run, capture.DecodeRequest, filepath.Join(r.Dir, "project"), filepath.Join(r.Dir, "home"), r.Dir)
		}
		runs = append(runs, run)
	}
	path := filepath.Join(dir, "agents.md")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteAgentsReport(f, runs); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "report: %s\n", path)
	return nil
}

// inProcessProxy starts, for each agent, `lab proxy` (runProxy, in this process) on a free
// loopback port in front of upstream, rendering through Ollama and recording into
// <agent dir>/capture/ with the agent's name as the arm; its own output goes to
// <agent dir>/proxy.log. With a script, the lab's scripted model (lab/scriptmodel) sits between
// the proxy and upstream, answering the agent from the script while upstream prefills every
// prompt, counting its replies' tokens with count (nil for none); its events go to
// <agent dir>/scripted-model.jsonl. The stop function ends them and returns the proxy's error.
func inProcessProxy(s *streams, upstream, cache, runID, model string, script *scriptmodel.Script, count func(string) (int, error)) agents.Endpoint {
	return func(ctx context.Context, a agents.Agent, dir string) (string, func() error, error) {
		logf, err := os.Create(filepath.Join(dir, "proxy.log"))
		if err != nil {
			return "", nil, err
		}
		front, closeModel := upstream, func() {}
		if script != nil {
			var err error
			front, closeModel, err = startScriptedModel(s, upstream, script, a, dir, count)
			if err != nil {
				logf.Close()
				return "", nil, fmt.Errorf("start the scripted model: %w", err)
			}
		}
		fmt.Fprintf(s.err, "%s: starting lab proxy in front of %s (its log: %s; it waits while another lab process uses the server)\n", a.Name, front, logf.Name())
		pctx, cancel := context.WithCancel(ctx)
		ready := make(chan string, 1)
		done := make(chan error, 1)
		ps := &streams{out: logf, err: logf, getenv: s.getenv, started: true}
		po := &proxyOptions{
			Listen: "127.0.0.1:0", Upstream: front, RunDir: filepath.Join(dir, "capture"), RunID: runID,
			Label: a.Name, SaveRequests: true, Render: capture.RenderOllama, CacheDir: cache,
			MaxRequestBytes: capture.DefaultMaxRequestBytes, Tags: []string{"agent=" + a.Name, "agent_version=" + a.Version, "model=" + model},
			ready: func(addr string) { ready <- addr },
		}
		if script != nil {
			po.server, po.scripted = upstream, true
			po.Tags = append(po.Tags, "script="+script.Name)
		}
		go func() { done <- runProxy(pctx, ps, po) }()
		stop := func() error {
			cancel()
			err := <-done
			closeModel()
			logf.Close()
			return err
		}
		select {
		case addr := <-ready:
			// Each agent starts on a cold KV cache: the model is unloaded through the proxy,
			// which empties the server's cache and the proxy's model of it alike, so an agent's
			// first request is not measured against what the previous agent left.
			if err := unloadModel(pctx, "http://"+addr, model); err != nil {
				_ = stop()
				return "", nil, fmt.Errorf("unload %s before the agent's session: %w", model, err)
			}
			return "http://" + addr, stop, nil
		case err := <-done:
			cancel()
			closeModel()
			logf.Close()
			if err == nil {
				err = errors.New("the proxy ended before it listened")
			}
			return "", nil, fmt.Errorf("start lab proxy (see %s): %w", filepath.Join(dir, "proxy.log"), err)
		}
	}
}

// startScriptedModel serves the scripted model for agent a on a free loopback port in front of
// upstream (lab server start's Ollama), its intents mapped for a's project folder
// (<dir>/project) and its events written to <dir>/scripted-model.jsonl; it counts reply tokens
// with count (the served model's tokenizer; nil reports none). It returns the base URL and a
// function that stops it.
func startScriptedModel(s *streams, upstream string, script *scriptmodel.Script, a agents.Agent, dir string, count func(string) (int, error)) (string, func(), error) {
	ev, err := os.Create(filepath.Join(dir, "scripted-model.jsonl"))
	if err != nil {
		return "", nil, err
	}
	o := scriptmodel.Options{Upstream: upstream, Script: script, Events: ev,
		Env: scriptmodel.Env{Project: filepath.Join(dir, "project"), Agent: a.Name}, CountTokens: count}
	sm, err := scriptmodel.New(o)
	if err != nil {
		ev.Close()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ev.Close()
		return "", nil, err
	}
	hs := &http.Server{Handler: sm, ReadHeaderTimeout: time.Minute}
	go func() { _ = hs.Serve(ln) }()
	fmt.Fprintf(s.err, "%s: scripted model %q on http://%s in front of %s (its events: %s)\n", a.Name, script.Name, ln.Addr(), upstream, ev.Name())
	// Stopping waits for the requests in flight: the last answer's fill runs after the agent
	// has it (and may have exited), and its event is written after the fill.
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		ev.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// scriptProgress fills run's script fields from the scripted model's events file
// ([scriptmodel.Script.Progress]): how many steps were served, and a note for each that was not
// or whose request failed. An events file that cannot be read is a note of its own.
func scriptProgress(run *report.AgentRun, script *scriptmodel.Script, events string) {
	evs, err := scriptmodel.ReadEvents(events)
	if err != nil {
		run.ScriptNotes = append(run.ScriptNotes, "the scripted model's events: "+err.Error())
	}
	for _, o := range script.Progress(evs) {
		run.ScriptSteps++
		switch o.Outcome {
		case scriptmodel.Served:
			run.ScriptServed++
		case scriptmodel.Skipped:
			run.ScriptNotes = append(run.ScriptNotes, fmt.Sprintf("turn %d step %d (%s): skipped, %s", o.Turn, o.Step, o.Intent, o.Why))
		default:
			run.ScriptNotes = append(run.ScriptNotes, fmt.Sprintf("turn %d step %d (%s): not reached (the agent stopped, or its turn failed, before asking for it)", o.Turn, o.Step, o.Intent))
		}
		for _, e := range o.Errors {
			run.ScriptNotes = append(run.ScriptNotes, fmt.Sprintf("turn %d step %d (%s): a request failed: %s", o.Turn, o.Step, o.Intent, e))
		}
	}
}

// referenceAgent names the reference row of the agents' report: the lab's own harness.
const referenceAgent = "lab (spec arm)"

// referenceRun runs the lab's own harness on the scripted session the agents got (the script
// as a scenario, [scriptmodel.Script.Scenario], over the same workspace) with the spec arm
// against lab server start's server, its request bodies saved, into <dir>/run_id=lab-spec/:
// the reference row of the scorecard, measured as `lab run` measures (cached tokens from the
// server log, expected from the server's rendering). Its progress goes to
// <dir>/lab-spec.log. A failure is the row's Error.
func referenceRun(ctx context.Context, s *streams, script *scriptmodel.Script, workspace map[string]string, cache, dir string) *report.AgentRun {
	ref := &report.AgentRun{Agent: referenceAgent, Version: version()}
	sc, err := script.Scenario(workspace)
	if err != nil {
		ref.Error = "the script as a scenario: " + err.Error()
		return ref
	}
	logf, err := os.Create(filepath.Join(dir, "lab-spec.log"))
	if err != nil {
		ref.Error = err.Error()
		return ref
	}
	defer logf.Close()
	fmt.Fprintf(s.err, "%s: the lab's harness on the same session (log: %s)\n", referenceAgent, logf.Name())
	ps := &streams{out: logf, err: logf, getenv: s.getenv, started: true}
	ro := runDefaults(ps)
	ro.scenarios, ro.Arm, ro.Backend, ro.CacheDir, ro.Quiet, ro.SaveRequests = []*scenario.Scenario{sc}, "spec", "ollama", cache, true, true
	ro.ResultsDir, ro.RunID = dir, "lab-spec"
	flags := map[string]string{"backend": "ollama", "arm": "spec", "save-requests": "true", "scenario": sc.Name}
	ro.call = &runCall{retry: ro.Reliability.policy(), flags: flags}
	ro.changed = func(name string) bool { _, ok := flags[name]; return ok }
	runDir, _, err := runMatrix(ctx, ps, ro)
	if err != nil {
		ref.Error = "lab run: " + err.Error()
		if runDir == "" {
			return ref
		}
	}
	rows, bodies, lerr := report.LoadAgentCapture(runDir)
	if lerr != nil && ref.Error == "" {
		ref.Error = "read its run: " + lerr.Error()
	}
	ref.Rows, ref.Bodies = rows, bodies
	return ref
}

// harnessBodies decodes a request body `lab run --save-requests` saved: an Ollama /api/chat
// body when the line names no API (the lab's harness on Ollama), else as capture decodes it.
func harnessBodies(api string, body []byte) (*chat.Request, error) {
	if api == "" {
		api = capture.APIOllamaChat
	}
	return capture.DecodeRequest(api, body)
}

// servedTokenCounter counts a text's tokens with the tokenizer of the model lab server start
// serves (read from its model file); nil when the server is not running or its model file or
// tokenizer cannot be read.
func servedTokenCounter(cache string) func(string) (int, error) {
	srv, err := localserver.Attach(context.Background(), sharedServerDir(cache))
	if err != nil {
		return nil
	}
	gguf, err := srv.ModelFile(localserver.DefaultModelName)
	if err != nil {
		return nil
	}
	tok, err := tokenizer.Load(gguf)
	if err != nil {
		return nil
	}
	return func(text string) (int, error) {
		ids, err := tok.Encode(text)
		return len(ids), err
	}
}

// unloadModel asks the Ollama server behind base to unload model (/api/generate with no prompt
// and keep_alive 0, Ollama's documented unload), which drops its KV cache. An error is a
// transport error or a status other than 2xx.
func unloadModel(ctx context.Context, base, model string) error {
	body, _ := json.Marshal(map[string]any{"model": model, "keep_alive": 0})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// printAgents writes the per-agent table: install, turns, requests, session identity and
// what the agent tried to reach outside loopback.
func printAgents(s *streams, dir string, rs []agents.Result) {
	fmt.Fprintf(s.out, "agents: %s\n", filepath.Join(dir, "agents.json"))
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "agent\tversion\tinstall\tturns ok\trequests\tsessions\toutside\terror")
	for _, r := range rs {
		inst := fmt.Sprintf("%.0f MB, %.1f s", float64(r.InstallBytes)/1e6, r.InstallSeconds)
		if r.InstallReused {
			inst = fmt.Sprintf("%.0f MB, cached", float64(r.InstallBytes)/1e6)
		}
		ok := 0
		for _, t := range r.Turns {
			if t.Exit != nil && *t.Exit == 0 {
				ok++
			}
		}
		var out []string
		for h, n := range r.Outside {
			out = append(out, fmt.Sprintf("%s ×%d", h, n))
		}
		sort.Strings(out)
		if len(out) == 0 {
			out = []string{"none"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%s\n", r.Agent, r.Version, inst, ok, len(r.Turns), r.Requests, len(r.Sessions), strings.Join(out, ", "), r.Error)
	}
	tw.Flush()
}
