package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Turn is one user turn of the scripted session.
type Turn struct {
	Prompt string `json:"prompt"`
	// Resume runs the agent's resume command (continue its most recent session) rather than
	// its first-turn command.
	Resume bool `json:"resume"`
	// TZ is the turn's local time zone, the child's TZ variable (an IANA name such as
	// "Etc/GMT-5"); "" leaves TZ unset: the machine's own zone.
	TZ string `json:"tz,omitempty"`
}

// MidnightZones gives n turns local time zones such that the clock crosses midnight before
// the 1-based turn before: at now, the turns before it read 22:00–22:59 of one day and the
// others 00:00–00:59 of the next, so that the crossing holds however long the first turns take,
// up to an hour. The zones are whole-hour Etc/GMT zones (whose sign is POSIX's, inverted: Etc/GMT-5 is
// UTC+05:00). before outside 2..n gives nil (no zones).
func MidnightZones(now time.Time, n, before int) []string {
	if before < 2 || before > n {
		return nil
	}
	h := now.UTC().Hour()
	// The offset, in hours east of UTC, that shows hour 22: in -12..11, so that it and the
	// offset 2 hours east of it (hour 0 of the next day) are both real zones (UTC-12..UTC+14).
	east := ((22-h+12)%24+24)%24 - 12
	zone := func(east int) string {
		switch {
		case east == 0:
			return "Etc/GMT"
		case east > 0:
			return fmt.Sprintf("Etc/GMT-%d", east)
		default:
			return fmt.Sprintf("Etc/GMT+%d", -east)
		}
	}
	out := make([]string, n)
	for i := range out {
		if i+1 < before {
			out[i] = zone(east)
		} else {
			out[i] = zone(east + 2)
		}
	}
	return out
}

// DefaultTurns is the scripted session every agent gets: three user turns over the scratch
// project, the second and third resuming the first one's session.
var DefaultTurns = []Turn{
	{Prompt: "Read main.go and say in one sentence what the program does."},
	{Prompt: "Which file holds the tests, and what do they check? Answer briefly.", Resume: true},
	{Prompt: "Suggest one small improvement to greet.go. Do not edit any file.", Resume: true},
}

// projectFiles are the scratch project's files, written fresh for each agent.
var projectFiles = map[string]string{
	"go.mod":        "module hello\n\ngo 1.22\n",
	"main.go":       "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tname := \"world\"\n\tif len(os.Args) > 1 {\n\t\tname = os.Args[1]\n\t}\n\tfmt.Println(Greet(name))\n}\n",
	"greet.go":      "package main\n\n// Greet returns a greeting for name.\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name + \"!\"\n}\n",
	"greet_test.go": "package main\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\tif got := Greet(\"Ada\"); got != \"Hello, Ada!\" {\n\t\tt.Fatalf(\"Greet: got %q\", got)\n\t}\n}\n",
	"README.md":     "# hello\n\nPrints a greeting: `go run . NAME`.\n",
}

// DefaultTurnTimeout is how long one turn's child process may run before it is killed.
const DefaultTurnTimeout = 5 * time.Minute

// Endpoint gives the base URL an agent is pointed at (its root, such as http://127.0.0.1:8081,
// no /v1) and a stop function called once the agent's session is over; dir is the agent's run
// folder, where a proxy started for it writes its capture.
type Endpoint func(ctx context.Context, a Agent, dir string) (baseURL string, stop func() error, err error)

// Options are the inputs of [Run].
type Options struct {
	// Agents are the agents to drive, one at a time, in this order.
	Agents []Agent
	// CacheDir is the lab's cache folder: agents are installed under CacheDir/agents/.
	CacheDir string
	// RunDir receives one folder per agent and agents.json, the results.
	RunDir string
	// Endpoint gives each agent its base URL (required).
	Endpoint Endpoint
	// Model is the model name every agent asks for (required).
	Model string
	// Turns is the scripted session; nil is [DefaultTurns].
	Turns []Turn
	// Project is the scratch project's files (path relative to the project folder → text),
	// written fresh for each agent; nil is the lab's small Go project (main.go, greet.go, ...).
	Project map[string]string
	// Midnight, when 2 or more, is the 1-based turn before which each agent's clock crosses
	// midnight: when the agent's session starts, its turns get the time zones of
	// [MidnightZones] (a turn's own TZ is then replaced). 0 keeps the turns' TZ.
	Midnight int
	// TurnTimeout limits each turn's child process; 0 is [DefaultTurnTimeout].
	TurnTimeout time.Duration
	// Progress (nil for none) receives a line per agent step and turn.
	Progress io.Writer
	// install replaces [Install] (tests).
	install func(ctx context.Context, cacheDir string, a Agent, log io.Writer) (*Installed, error)
}

// TurnResult is one turn's child process.
type TurnResult struct {
	N      int  `json:"n"`
	Resume bool `json:"resume"`
	// TZ is the turn's local time zone ([Turn.TZ]); "" for the machine's own.
	TZ string `json:"tz,omitempty"`
	// Exit is the exit code; nil when the process did not exit by itself (killed at the time
	// limit, or never started).
	Exit    *int    `json:"exit"`
	Seconds float64 `json:"seconds"`
	// Requests is how many requests reached the endpoint during the turn.
	Requests int `json:"requests"`
	// Stdout and Stderr are the files, in the agent's folder, holding the process's output.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Error  string `json:"error,omitempty"`
}

// Result is one agent's run.
type Result struct {
	Agent   string `json:"agent"`
	Package string `json:"package"`
	Version string `json:"version"`
	API     string `json:"api"`
	// Dir is the agent's run folder.
	Dir string `json:"dir"`
	// InstallBytes is the size of the install; InstallSeconds npm's time (0 when reused).
	InstallBytes   int64        `json:"install_bytes"`
	InstallSeconds float64      `json:"install_seconds"`
	InstallReused  bool         `json:"install_reused"`
	Turns          []TurnResult `json:"turns"`
	// Requests is every request that reached the endpoint (wire.jsonl); Paths counts them by
	// method and path.
	Requests int            `json:"requests"`
	Paths    map[string]int `json:"paths"`
	// Headers are the header names the agent sent, sorted.
	Headers []string `json:"headers"`
	// Sessions are the distinct values of the agent's session header or body field
	// (Agent.Session) seen on the wire, in order of first sight.
	Sessions []string `json:"sessions"`
	// Outside are the hosts (host:port) the agent tried to reach other than the endpoint,
	// each refused by the run's own HTTP(S) proxy, with a count.
	Outside map[string]int `json:"outside"`
	// Error is why the agent could not be installed, configured or started; "" when every
	// turn ran. A turn's own failure is in its TurnResult.
	Error string `json:"error,omitempty"`
}

// Run drives each agent of o.Agents through the scripted session, one agent at a time:
// install (or reuse), a scratch HOME and project under RunDir/<agent>/, the endpoint, the
// turns, each a child process with a time limit. An agent that cannot be installed or
// started is a Result with Error set, and the others still run. It writes
// RunDir/agents.json (the results) and returns them; the error is for bad options or a
// results file that cannot be written.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Endpoint == nil || o.Model == "" || o.RunDir == "" || o.CacheDir == "" {
		return nil, errors.New("agents: Endpoint, Model, RunDir and CacheDir are required")
	}
	if o.Turns == nil {
		o.Turns = DefaultTurns
	}
	if len(o.Turns) == 0 || o.Turns[0].Resume {
		return nil, errors.New("agents: the first turn cannot resume a session")
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = DefaultTurnTimeout
	}
	if o.install == nil {
		o.install = Install
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run folder: %w", err)
	}
	var results []Result
	for _, a := range o.Agents {
		if ctx.Err() != nil {
			break
		}
		r := runAgent(ctx, o, a, progress)
		if r.Error != "" {
			fmt.Fprintf(progress, "%s: error: %s\n", a.Name, r.Error)
		} else {
			fmt.Fprintf(progress, "%s: done: %d requests (%s)\n", a.Name, r.Requests, pathsLine(r.Paths))
		}
		results = append(results, r)
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return results, err
	}
	if err := os.WriteFile(filepath.Join(o.RunDir, "agents.json"), append(b, '\n'), 0o644); err != nil {
		return results, fmt.Errorf("write results: %w", err)
	}
	return results, ctx.Err()
}

func pathsLine(paths map[string]int) string {
	var ks []string
	for k := range paths {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, paths[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func runAgent(ctx context.Context, o Options, a Agent, progress io.Writer) (r Result) {
	r = Result{Agent: a.Name, Package: a.Package, Version: a.Version, API: a.API,
		Dir: filepath.Join(o.RunDir, a.Name), Paths: map[string]int{}, Outside: map[string]int{}}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		r.Error = err.Error()
		return r
	}
	inst, err := o.install(ctx, o.CacheDir, a, progress)
	if err != nil {
		r.Error = "install: " + err.Error()
		return r
	}
	r.InstallBytes, r.InstallSeconds, r.InstallReused = inst.Bytes, inst.Seconds, inst.Reused
	if inst.Reused {
		fmt.Fprintf(progress, "%s: %s in the cache (%.0f MB)\n", a.Name, a.Spec(), float64(inst.Bytes)/1e6)
	} else {
		fmt.Fprintf(progress, "%s: installed %s (%.0f MB, %.1f s)\n", a.Name, a.Spec(), float64(inst.Bytes)/1e6, inst.Seconds)
	}
	home, project := filepath.Join(r.Dir, "home"), filepath.Join(r.Dir, "project")
	for _, d := range []string{home, project, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	files := o.Project
	if files == nil {
		files = projectFiles
	}
	for name, text := range files {
		p := filepath.Join(project, filepath.FromSlash(name))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			r.Error = fmt.Sprintf("project file %q: want a path inside the project", name)
			return r
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.Error = err.Error()
			return r
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	if err := gitInit(ctx, project); err != nil {
		r.Error = "make the scratch project a git repository: " + err.Error()
		return r
	}
	deny, err := startDeny(filepath.Join(r.Dir, "outside.jsonl"))
	if err != nil {
		r.Error = "start the refusing proxy: " + err.Error()
		return r
	}
	defer func() { r.Outside = deny.close() }()
	base, stop, err := o.Endpoint(ctx, a, r.Dir)
	if err != nil {
		r.Error = "endpoint: " + err.Error()
		return r
	}
	front, err := startFront(base, a.Session, filepath.Join(r.Dir, "wire.jsonl"))
	if err != nil {
		_ = stop()
		r.Error = "start the recording front: " + err.Error()
		return r
	}
	defer func() {
		w := front.close()
		r.Requests, r.Paths, r.Headers, r.Sessions = w.requests, w.paths, w.headers, w.sessions
		if err := stop(); err != nil && r.Error == "" {
			r.Error = "endpoint: " + err.Error()
		}
	}()
	vars := map[string]string{"home": home, "project": project, "base": front.url, "model": o.Model, "key": "lab-dummy-key"}
	for rel, text := range a.Files {
		p := expand(rel, vars)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.Error = err.Error()
			return r
		}
		if err := os.WriteFile(p, []byte(expand(text, vars)), 0o644); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	env := agentEnv(a, vars, deny.url)
	// The zones are worked out at this agent's start, not the run's: an agent that starts an
	// hour after the first still has its clock cross midnight where the script says.
	zones := MidnightZones(time.Now(), len(o.Turns), o.Midnight)
	for i, t := range o.Turns {
		if zones != nil {
			t.TZ = zones[i]
		}
		args := a.First
		if t.Resume {
			args = a.Resume
		}
		vars["prompt"] = t.Prompt
		argv := make([]string, len(args))
		for j, s := range args {
			argv[j] = expand(s, vars)
		}
		before := front.count()
		tenv := env
		if t.TZ != "" {
			tenv = append(append([]string(nil), env...), "TZ="+t.TZ)
		}
		tr := runTurn(ctx, inst.Bin, argv, tenv, project, r.Dir, i+1, o.TurnTimeout)
		tr.Resume, tr.TZ = t.Resume, t.TZ
		tr.Requests = front.count() - before
		kind := "first"
		if t.Resume {
			kind = "resumed"
		}
		status := "killed"
		if tr.Exit != nil {
			status = fmt.Sprintf("exit %d", *tr.Exit)
		}
		if tr.Error != "" {
			status += ": " + tr.Error
		}
		fmt.Fprintf(progress, "%s: turn %d/%d (%s): %s in %.1f s, %d requests\n", a.Name, i+1, len(o.Turns), kind, status, tr.Seconds, tr.Requests)
		r.Turns = append(r.Turns, tr)
		if i == 0 && tr.Exit == nil && tr.Requests == 0 && tr.Error != "" && strings.HasPrefix(tr.Error, "start:") {
			r.Error = "could not start: " + tr.Error
			return r
		}
	}
	return r
}

// gitInit makes the scratch project a git repository of its own with its files in one commit,
// as a real project is: an agent that looks for the repository it runs in (Codex sends its commit
// and status in every request's metadata, Claude Code and Qwen Code in their prompts) finds this
// one, not a clone the run folder happens to sit in (the lab's own results/), whose log and
// status would change with it.
// Without git on PATH the project stays a plain folder.
func gitInit(ctx context.Context, dir string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=lab", "GIT_AUTHOR_EMAIL=lab@localhost", "GIT_COMMITTER_NAME=lab", "GIT_COMMITTER_EMAIL=lab@localhost",
		"GIT_AUTHOR_DATE=2026-11-01T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-01T12:00:00Z")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "The scratch project"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// agentEnv is the child's whole environment: PATH and the locale from the lab's own, a
// scratch HOME (and XDG folders and TMPDIR in it), the refusing proxy for everything but
// loopback, and the agent's own variables. Nothing else is inherited, no real API key
// among it.
func agentEnv(a Agent, vars map[string]string, denyURL string) []string {
	home := vars["home"]
	env := map[string]string{
		"PATH":            os.Getenv("PATH"),
		"HOME":            home,
		"USER":            "lab",
		"LANG":            "C.UTF-8",
		"TERM":            "dumb",
		"NO_COLOR":        "1",
		"TMPDIR":          filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"HTTP_PROXY":      denyURL, "HTTPS_PROXY": denyURL, "ALL_PROXY": denyURL,
		"http_proxy": denyURL, "https_proxy": denyURL, "all_proxy": denyURL,
		"NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
		"npm_config_update_notifier": "false",
		// Node's own fetch follows HTTP(S)_PROXY only when asked (Node 22.21 and 24 on; older
		// versions ignore it, and a request of theirs outside loopback is not seen here).
		"NODE_USE_ENV_PROXY": "1",
	}
	for k, v := range a.Env {
		env[k] = expand(v, vars)
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// runTurn runs one turn's child process in project with a time limit, its output into
// dir/turn-N.stdout and .stderr.
func runTurn(ctx context.Context, bin string, argv, env []string, project, dir string, n int, limit time.Duration) TurnResult {
	tr := TurnResult{N: n, Stdout: fmt.Sprintf("turn-%d.stdout", n), Stderr: fmt.Sprintf("turn-%d.stderr", n)}
	stdout, err := os.Create(filepath.Join(dir, tr.Stdout))
	if err != nil {
		tr.Error = err.Error()
		return tr
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, tr.Stderr))
	if err != nil {
		tr.Error = err.Error()
		return tr
	}
	defer stderr.Close()
	tctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(tctx, bin, argv...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = project, env, stdout, stderr
	killGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tr.Error = "start: " + err.Error()
		return tr
	}
	err = cmd.Wait()
	tr.Seconds = time.Since(start).Seconds()
	switch {
	case tctx.Err() != nil:
		tr.Error = fmt.Sprintf("killed at the time limit (%s)", limit)
	case err != nil && cmd.ProcessState == nil:
		tr.Error = err.Error()
	}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		c := cmd.ProcessState.ExitCode()
		tr.Exit = &c
	}
	return tr
}
