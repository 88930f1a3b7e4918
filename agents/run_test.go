package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain makes the test binary a fake agent when LAB_FAKE_AGENT is set (through the agent's
// Env, since the lab gives an agent no other variable of its own).
func TestMain(m *testing.M) {
	if os.Getenv("LAB_FAKE_AGENT") != "" {
		os.Exit(fakeAgent())
	}
	os.Exit(m.Run())
}

// fakeAgent sends one chat request to $FAKE_BASE with a session header, tries a host outside
// loopback through the proxy of its environment, and prints what it saw.
func fakeAgent() int {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "sleep" {
		time.Sleep(time.Minute)
		return 0
	}
	resume := len(args) > 0 && args[0] == "again"
	req, _ := http.NewRequest("POST", os.Getenv("FAKE_BASE")+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Fake-Session", "s-1")
	req.Header.Set("Authorization", "Bearer "+os.Getenv("FAKE_KEY"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	resp.Body.Close()
	if r, err := http.Get("http://telemetry.example.invalid/collect"); err == nil {
		fmt.Printf("outside: %d\n", r.StatusCode)
		r.Body.Close()
	}
	wd, _ := os.Getwd()
	cfg, _ := os.ReadFile(filepath.Join(os.Getenv("HOME"), "fake.conf"))
	fmt.Printf("resume=%v home=%s wd=%s secret=%q proxy=%v,%s conf=%s tz=%q args=%q\n", resume, os.Getenv("HOME"), wd, os.Getenv("LAB_TEST_SECRET"), os.Getenv("HTTPS_PROXY") != "", os.Getenv("NODE_USE_ENV_PROXY"), cfg, os.Getenv("TZ"), args)
	if strings.Contains(strings.Join(args, " "), "fail") {
		return 7
	}
	return 0
}

func fakeAgentSpec(name string) Agent {
	return Agent{Name: name, Package: "fake", Version: "1.0.0", API: "openai-chat", Bin: "fake",
		Session: Session{Where: "header", Name: "X-Fake-Session"},
		Env:     map[string]string{"LAB_FAKE_AGENT": "1", "FAKE_BASE": "{base}", "FAKE_KEY": "{key}"},
		Files:   map[string]string{"{home}/fake.conf": "base={base} model={model}"},
		First:   []string{"first", "{prompt}"},
		Resume:  []string{"again", "{prompt}"},
	}
}

func TestRunDrivesTurnsThroughTheEndpoint(t *testing.T) {
	t.Setenv("LAB_TEST_SECRET", "do-not-leak")
	var mu sync.Mutex
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Fake-Session"))
		mu.Unlock()
		io.WriteString(w, `{"choices":[]}`)
	}))
	defer upstream.Close()
	self, _ := os.Executable()
	runDir := t.TempDir()
	stopped := 0
	turns := []Turn{{Prompt: "one"}, {Prompt: "two", Resume: true}, {Prompt: "fail three", Resume: true, TZ: "Etc/GMT-5"}}
	var progress strings.Builder
	rs, err := Run(context.Background(), Options{
		Agents: []Agent{fakeAgentSpec("fake")}, CacheDir: t.TempDir(), RunDir: runDir, Model: "the-model", Turns: turns,
		Endpoint: func(_ context.Context, a Agent, dir string) (string, func() error, error) {
			if dir != filepath.Join(runDir, a.Name) {
				t.Errorf("endpoint dir %s", dir)
			}
			return upstream.URL, func() error { stopped++; return nil }, nil
		},
		Progress: &progress,
		install: func(context.Context, string, Agent, io.Writer) (*Installed, error) {
			return &Installed{Bin: self, Reused: true}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Error != "" || stopped != 1 {
		t.Fatalf("results %+v, stopped %d", rs, stopped)
	}
	r := rs[0]
	if len(got) != 3 || got[0] != "POST /v1/chat/completions s-1" {
		t.Fatalf("upstream saw %q: want 3 chat requests through the front, the session header kept", got)
	}
	if r.Requests != 3 || r.Paths["POST /v1/chat/completions"] != 3 || len(r.Sessions) != 1 || r.Sessions[0] != "s-1" {
		t.Fatalf("wire summary: %d requests, %v, sessions %v", r.Requests, r.Paths, r.Sessions)
	}
	if r.Outside["telemetry.example.invalid"] != 3 {
		t.Fatalf("outside %v: want the refused host counted on each turn", r.Outside)
	}
	for i, tr := range r.Turns {
		wantExit := 0
		if i == 2 {
			wantExit = 7
		}
		if tr.Exit == nil || *tr.Exit != wantExit || tr.Requests != 1 || tr.Resume != turns[i].Resume || tr.TZ != turns[i].TZ {
			t.Fatalf("turn %d: %+v", i+1, tr)
		}
		out, _ := os.ReadFile(filepath.Join(r.Dir, tr.Stdout))
		s := string(out)
		home := filepath.Join(r.Dir, "home")
		for _, want := range []string{fmt.Sprintf("resume=%v", turns[i].Resume), "home=" + home, "wd=" + filepath.Join(r.Dir, "project"),
			`secret=""`, "proxy=true,1", "model=the-model", "outside: 403", turns[i].Prompt, fmt.Sprintf("tz=%q", turns[i].TZ)} {
			if !strings.Contains(s, want) {
				t.Errorf("turn %d stdout %q: want %q", i+1, s, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "project", "main.go")); err != nil {
		t.Fatalf("scratch project: %v", err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "-C", filepath.Join(r.Dir, "project"), "log", "--format=%s %an").Output()
		if err != nil || strings.TrimSpace(string(out)) != "The scratch project lab" {
			t.Fatalf("the scratch project's git log %q (%v): want its own repository with one commit", out, err)
		}
	}
	wire, _ := os.ReadFile(filepath.Join(r.Dir, "wire.jsonl"))
	if strings.Contains(string(wire), "lab-dummy-key") || !strings.Contains(string(wire), "(redacted)") {
		t.Fatalf("wire.jsonl holds the key, or no redaction: %s", wire)
	}
	var saved []Result
	b, _ := os.ReadFile(filepath.Join(runDir, "agents.json"))
	if err := json.Unmarshal(b, &saved); err != nil || len(saved) != 1 || saved[0].Requests != 3 {
		t.Fatalf("agents.json: %v %s", err, b)
	}
	if !strings.Contains(progress.String(), "fake: turn 2/3 (resumed): exit 0") {
		t.Fatalf("progress:\n%s", progress.String())
	}
}

func TestRunErrorsAreRowsNotCrashes(t *testing.T) {
	self, _ := os.Executable()
	sleepy := fakeAgentSpec("sleepy")
	sleepy.First = []string{"sleep", "{prompt}"}
	missing := fakeAgentSpec("missing")
	broken := fakeAgentSpec("broken")
	rs, err := Run(context.Background(), Options{
		Agents: []Agent{broken, missing, sleepy}, CacheDir: t.TempDir(), RunDir: t.TempDir(), Model: "m",
		Turns: []Turn{{Prompt: "x"}}, TurnTimeout: 300 * time.Millisecond,
		Endpoint: func(context.Context, Agent, string) (string, func() error, error) {
			return "http://127.0.0.1:9", func() error { return nil }, nil
		},
		install: func(_ context.Context, _ string, a Agent, _ io.Writer) (*Installed, error) {
			switch a.Name {
			case "broken":
				return nil, errors.New("npm install fake@1.0.0: exit status 1")
			case "missing":
				return &Installed{Bin: filepath.Join(t.TempDir(), "no-such-agent")}, nil
			}
			return &Installed{Bin: self}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d results, want one per agent", len(rs))
	}
	if !strings.Contains(rs[0].Error, "install: npm install fake@1.0.0") {
		t.Errorf("broken: error %q", rs[0].Error)
	}
	if !strings.Contains(rs[1].Error, "could not start") {
		t.Errorf("missing: error %q, turns %+v", rs[1].Error, rs[1].Turns)
	}
	if tr := rs[2].Turns; len(tr) != 1 || tr[0].Exit != nil || !strings.Contains(tr[0].Error, "time limit") || tr[0].Seconds > 10 {
		t.Errorf("sleepy: turns %+v, want one killed at the time limit", tr)
	}
}

func TestDenyRecordsConnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outside.jsonl")
	d, err := startDeny(path)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodConnect, d.url, nil)
	req.Host = "api.example.invalid:443"
	if resp, err := http.DefaultTransport.RoundTrip(req); err == nil {
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT answered %d, want 403", resp.StatusCode)
		}
		resp.Body.Close()
	}
	seen := d.close()
	if seen["api.example.invalid:443"] != 1 {
		t.Fatalf("seen %v", seen)
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"method":"CONNECT"`) {
		t.Fatalf("outside.jsonl: %q", sc.Text())
	}
}

func TestSessionValueFromBody(t *testing.T) {
	v := sessionValue(Session{Where: "body", Name: "prompt_cache_key"}, nil, []byte(`{"model":"m","prompt_cache_key":"abc"}`))
	if v != "abc" {
		t.Fatalf("got %q", v)
	}
	if v := sessionValue(Session{Where: "body", Name: "prompt_cache_key"}, nil, []byte(`{"x":1}`)); v != "" {
		t.Fatalf("absent: got %q", v)
	}
}

func TestMidnightZonesCrossMidnight(t *testing.T) {
	for h := 0; h < 24; h++ {
		now := time.Date(2026, 12, 1, h, 37, 0, 0, time.UTC)
		zones := MidnightZones(now, 4, 3)
		if len(zones) != 4 {
			t.Fatalf("%02d:37 UTC: %d zones, want 4", h, len(zones))
		}
		var days [4]int
		for i, z := range zones {
			loc, err := time.LoadLocation(z)
			if err != nil {
				t.Fatalf("%02d:37 UTC: turn %d: zone %q: %v", h, i+1, z, err)
			}
			local := now.In(loc)
			want := 22
			if i+1 >= 3 {
				want = 0
			}
			if local.Hour() != want {
				t.Errorf("%02d:37 UTC: turn %d in %s reads %s, want hour %d", h, i+1, z, local.Format("2006-01-02 15:04"), want)
			}
			days[i] = local.YearDay() + 1000*local.Year()
		}
		if days[0] != days[1] || days[2] != days[3] || days[2] == days[1] {
			t.Errorf("%02d:37 UTC: local days %v: want turns 1–2 on one day and 3–4 on another", h, days)
		}
	}
	if z := MidnightZones(time.Now(), 3, 0); z != nil {
		t.Errorf("before 0: %v, want nil", z)
	}
	if z := MidnightZones(time.Now(), 3, 4); z != nil {
		t.Errorf("before past the last turn: %v, want nil", z)
	}
}

// Options.Midnight gives each turn the zone of MidnightZones at the agent's start: the turns
// before it read 22:xx, the rest 00:xx of the next day, in the child's own TZ.
func TestRunMidnightSetsEachTurnsZone(t *testing.T) {
	self, _ := os.Executable()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[]}`) }))
	defer upstream.Close()
	rs, err := Run(context.Background(), Options{
		Agents: []Agent{fakeAgentSpec("fake")}, CacheDir: t.TempDir(), RunDir: t.TempDir(), Model: "m", Midnight: 2,
		Turns: []Turn{{Prompt: "one", TZ: "Etc/GMT"}, {Prompt: "two", Resume: true}},
		Endpoint: func(context.Context, Agent, string) (string, func() error, error) {
			return upstream.URL, func() error { return nil }, nil
		},
		install: func(context.Context, string, Agent, io.Writer) (*Installed, error) {
			return &Installed{Bin: self, Reused: true}, nil
		},
	})
	if err != nil || len(rs) != 1 || len(rs[0].Turns) != 2 {
		t.Fatalf("Run: %v %+v", err, rs)
	}
	now := time.Now()
	for i, want := range []int{22, 0} {
		tr := rs[0].Turns[i]
		loc, err := time.LoadLocation(tr.TZ)
		if err != nil {
			t.Fatalf("turn %d zone %q: %v", i+1, tr.TZ, err)
		}
		// A minute's slack: the test may cross an hour.
		if h := now.Add(-time.Minute).In(loc).Hour(); h != want && now.In(loc).Hour() != want {
			t.Errorf("turn %d in %s reads hour %d, want %d", i+1, tr.TZ, h, want)
		}
		out, _ := os.ReadFile(filepath.Join(rs[0].Dir, tr.Stdout))
		if !strings.Contains(string(out), fmt.Sprintf("tz=%q", tr.TZ)) {
			t.Errorf("turn %d stdout %q: want the child's TZ %s", i+1, out, tr.TZ)
		}
	}
}
