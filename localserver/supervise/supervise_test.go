package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the fake server: with SUPERVISE_FAKE=serve in its environment it
// serves GET /health on the address after -addr (503 for the first FAKE_NOT_READY requests, then
// 200) and nothing else; FAKE_EXIT makes it fail at once, FAKE_IGNORE_TERM makes it ignore
// SIGTERM, and FAKE_CHILD=<file> makes it start a child in its process group (SUPERVISE_FAKE=child,
// which only sleeps) and write the child's pid to the file.
func TestMain(m *testing.M) {
	switch os.Getenv("SUPERVISE_FAKE") {
	case "serve":
		fakeServe()
		os.Exit(0)
	case "child":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeServe() {
	if os.Getenv("FAKE_EXIT") != "" {
		fmt.Fprintln(os.Stderr, "fake server cannot start")
		os.Exit(3)
	}
	if os.Getenv("FAKE_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	if f := os.Getenv("FAKE_CHILD"); f != "" {
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = []string{"SUPERVISE_FAKE=child"}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		os.WriteFile(f, []byte(strconv.Itoa(c.Process.Pid)), 0o644)
		if os.Getenv("FAKE_EXIT_AFTER_CHILD") != "" {
			fmt.Fprintln(os.Stderr, "fake server started a child, then failed")
			os.Exit(3)
		}
	}
	var addr string
	for i, a := range os.Args {
		if a == "-addr" && i+1 < len(os.Args) {
			addr = os.Args[i+1]
		}
	}
	notReady, _ := strconv.Atoi(os.Getenv("FAKE_NOT_READY"))
	var n atomic.Int32
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if int(n.Add(1)) <= notReady {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	})
	fmt.Printf("fake serving on %s\n", addr)
	fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil))
	os.Exit(5)
}

// healthOK is the fake server's health probe: GET /health answers 200.
func healthOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health: %s", resp.Status)
	}
	return nil
}

// info is what a server's Describe adds to the state file in these tests.
type info struct {
	Version string `json:"version"`
	Serves  string `json:"serves"`
}

// fakeSpec returns the Spec of a fake server in a new state folder, with env settings for it.
func fakeSpec(t *testing.T, env ...string) Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Name:      "fake",
		Binary:    self,
		Dir:       filepath.Join(t.TempDir(), "state"),
		StateFile: "fake.json",
		LogFile:   "fake.log",
		Command: func(addr string, port int) ([]string, []string) {
			return []string{"-addr", addr}, append([]string{"SUPERVISE_FAKE=serve"}, env...)
		},
		Ready:    healthOK,
		Describe: func(context.Context, string) any { return info{Version: "v1.2", Serves: "model.gguf"} },
		Log:      io.Discard,
	}
}

// cleanup kills p's process group when the test ends, whatever happened.
func cleanup(t *testing.T, p *Process) {
	t.Cleanup(func() { syscall.Kill(-p.PID, syscall.SIGKILL) })
}

func TestStartAttachStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fakeSpec(t, "FAKE_NOT_READY=3")
	p, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || p.Binary != s.Binary || p.StartedAt.IsZero() || p.Log != filepath.Join(s.Dir, "fake.log") {
		t.Errorf("process = %+v; want a loopback URL, the binary, a start time and the log in the state folder", p)
	}
	if pgid, err := syscall.Getpgid(p.PID); err != nil || pgid != p.PID {
		t.Errorf("process group of pid %d = %d, %v; want its own", p.PID, pgid, err)
	}
	// The health probe was asked until it answered: the fake answers 503 three times first.
	if err := healthOK(ctx, p.URL); err != nil {
		t.Errorf("after Start the server is not healthy: %v", err)
	}
	log, _ := os.ReadFile(p.Log)
	for _, want := range []string{"--- lab: starting " + s.Binary + " -addr " + p.Host() + " on " + p.Host(), "fake serving on " + p.Host()} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	// The state file holds the process and Describe's fields.
	b, err := os.ReadFile(filepath.Join(s.Dir, "fake.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"pid": float64(p.PID), "url": p.URL, "log": p.Log, "binary": s.Binary, "version": "v1.2", "serves": "model.gguf"} {
		if st[k] != want {
			t.Errorf("state %s = %v; want %v (%s)", k, st[k], want, b)
		}
	}
	if _, ok := st["started_at"]; !ok {
		t.Errorf("state has no started_at: %s", b)
	}

	if _, err := Start(ctx, s); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Start = %v; want ErrAlreadyRunning", err)
	}
	var got info
	a, err := Attach(ctx, s, &got)
	if err != nil {
		t.Fatal(err)
	}
	if a.PID != p.PID || a.URL != p.URL || a.Binary != p.Binary || !reflect.DeepEqual(a.Args, p.Args) || got != (info{"v1.2", "model.gguf"}) {
		t.Errorf("Attach = %+v with %+v; want the started process with its info", a, got)
	}
	if a.Exited() {
		t.Error("attached process says it has exited")
	}
	// Stop through the attached value, as `lab server stop` in another process does.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// The attached value saw the process end (a zombie counts as ended); the started one reaps it.
	if !p.waitExit(5*time.Second) || !p.Exited() || alive(p.PID, p.Binary) {
		t.Errorf("pid %d alive after Stop", p.PID)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "fake.json")); !os.IsNotExist(err) {
		t.Errorf("state file still there after Stop: %v", err)
	}
	if _, err := Attach(ctx, s, nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach after Stop = %v; want ErrNotRunning", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop of a stopped server = %v; want nil", err)
	}
}

// A server that ignores SIGTERM is killed, with the child it started, after the grace.
func TestStopKillsAServerIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	childFile := filepath.Join(t.TempDir(), "child.pid")
	s := fakeSpec(t, "FAKE_IGNORE_TERM=1", "FAKE_CHILD="+childFile)
	s.StopGrace = 400 * time.Millisecond
	p, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	b, err := os.ReadFile(childFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	if pgid, err := syscall.Getpgid(child); err != nil || pgid != p.PID {
		t.Fatalf("child %d in group %d (%v); want the server's group %d", child, pgid, err, p.PID)
	}
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < s.StopGrace {
		t.Errorf("Stop took %s; want at least the grace %s (the server ignores SIGTERM)", d, s.StopGrace)
	}
	if !p.Exited() {
		t.Errorf("server pid %d alive after Stop", p.PID)
	}
	// The child is not ours to reap: it is gone, or a zombie until init reaps it. SIGKILL ends it
	// soon after the server, not at once: it is given a second.
	for deadline := time.Now().Add(time.Second); alive(child, s.Binary); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("child pid %d alive after Stop: the process group was not killed", child)
			break
		}
	}
}

// A server that ends on SIGTERM is not waited for the whole grace.
func TestStopEndsOnSIGTERM(t *testing.T) {
	t.Parallel()
	s := fakeSpec(t)
	s.StopGrace = 20 * time.Second
	p, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %s; a server that ends on SIGTERM should not wait for the grace", d)
	}
}

func TestAttachStaleState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fakeSpec(t)
	if _, err := Attach(ctx, s, nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(no state folder) = %v; want ErrNotRunning", err)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(s.Dir, s.StateFile)
	// A pid that has ended.
	cmd := exec.Command(s.Binary)
	cmd.Env = []string{"SUPERVISE_FAKE=serve", "FAKE_EXIT=1"}
	if err := cmd.Run(); cmd.ProcessState == nil {
		t.Fatal(err)
	}
	for name, st := range map[string]string{
		"dead pid": fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1", "binary": %q}`, cmd.Process.Pid, s.Binary),
		// This test process is alive but runs another binary than the one recorded.
		"another program": fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1", "binary": "/usr/bin/ollama"}`, os.Getpid()),
		"no binary":       fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1"}`, os.Getpid()),
		"no pid":          `{"url": "http://127.0.0.1:1"}`,
	} {
		if err := os.WriteFile(statePath, []byte(st), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Attach(ctx, s, nil); !errors.Is(err, ErrNotRunning) {
			t.Errorf("%s: Attach = %v; want ErrNotRunning", name, err)
		}
		if _, err := os.Stat(statePath); !os.IsNotExist(err) {
			t.Errorf("%s: stale state file not removed: %v", name, err)
		}
	}
	// A stale state file does not stop Start.
	os.WriteFile(statePath, []byte(fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1", "binary": %q}`, cmd.Process.Pid, s.Binary)), 0o644)
	p, err := Start(ctx, s)
	if err != nil {
		t.Fatalf("Start over a stale state file: %v", err)
	}
	cleanup(t, p)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	// A damaged state file is an error naming it, not a server that is not running.
	os.WriteFile(statePath, []byte("{"), 0o644)
	if _, err := Attach(ctx, s, nil); err == nil || errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), statePath) {
		t.Errorf("Attach(damaged state) = %v; want an error naming %s", err, statePath)
	}
}

// A live server whose health probe does not answer is reported, not taken as not running, and
// its state file stays (it may be loading).
func TestAttachNotReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fakeSpec(t)
	p, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, p)
	defer p.Stop()
	sick := s
	sick.Ready = func(context.Context, string) error { return errors.New("loading model") }
	if _, err := Attach(ctx, sick, nil); err == nil || errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "loading model") {
		t.Errorf("Attach(probe failing) = %v; want the probe's error", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, s.StateFile)); err != nil {
		t.Errorf("state file of a live server removed: %v", err)
	}
	if _, err := Start(ctx, sick); err == nil || errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), "is alive but") {
		t.Errorf("Start over a live server that does not answer = %v; want an error saying so", err)
	}
}

func TestStartFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server that exits at once: the error carries the log's last lines.
	s := fakeSpec(t, "FAKE_EXIT=1")
	_, err := Start(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "fake server cannot start") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Start(failing server) = %v; want an error with the log tail", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, s.StateFile)); !os.IsNotExist(err) {
		t.Errorf("failed Start left a state file: %v", err)
	}

	// A server that never gets ready is killed after the timeout.
	s = fakeSpec(t, "FAKE_NOT_READY=1000000")
	s.ReadyTimeout = 700 * time.Millisecond
	var started string
	s.Log = writerFunc(func(b []byte) { started += string(b) })
	_, err = Start(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "fake serving on") {
		t.Errorf("Start(never ready) = %v; want the last probe's error and the log tail", err)
	}
	var pid int
	if _, err := fmt.Sscanf(started[strings.Index(started, "(pid ")+len("(pid "):], "%d", &pid); err != nil {
		t.Fatalf("no pid in the progress line %q: %v", started, err)
	}
	if alive(pid, s.Binary) {
		syscall.Kill(-pid, syscall.SIGKILL)
		t.Errorf("server pid %d still alive after a failed Start", pid)
	}

	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"no binary", func(s *Spec) { s.Binary = filepath.Join(t.TempDir(), "none") }, "binary"},
		{"no folder", func(s *Spec) { s.Dir = "" }, "state folder"},
	} {
		s := fakeSpec(t)
		tc.edit(&s)
		if _, err := Start(ctx, s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Start = %v; want an error naming the %s", tc.name, err, tc.want)
		}
	}
}

// A port that is taken is an error, not a server that answers in place of ours.
func TestStartPortTaken(t *testing.T) {
	t.Parallel()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	addr, port, err := loopbackAddr("x", 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	s := fakeSpec(t)
	s.Port = port
	if _, err := Start(context.Background(), s); err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)) {
		t.Errorf("Start on a taken port = %v; want an error naming the port", err)
	}
}

// writerFunc is an io.Writer calling f with each write.
type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

func TestTail(t *testing.T) {
	t.Parallel()
	if got := Tail([]byte("a\nb\nc\n"), 2); got != "b\nc" {
		t.Errorf("Tail = %q; want %q", got, "b\nc")
	}
	if got := Tail([]byte("a"), 5); got != "a" {
		t.Errorf("Tail(one line) = %q", got)
	}
}
