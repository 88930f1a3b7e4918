package proxybench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain serves a child's role when this test binary was started as one (ChildMain);
// otherwise it runs the tests.
func TestMain(m *testing.M) {
	ChildMain()
	os.Exit(m.Run())
}

// The children a benchmark starts work from a test too: an upstream and a bare proxy in front
// of it, each a process of this test binary, carry a streamed answer, and stop with status 0
// on SIGINT; a child never stopped is killed when its test ends, and one that ends before it
// listens fails the test that started it.
func TestChildren(t *testing.T) {
	// In the process the end of this test starts: a child that ends at once (an unknown role).
	if os.Getenv("PROXYBENCH_FAILING_CHILD") != "" {
		StartChild(t, "no-such-role", "")
		return
	}
	up := StartChild(t, RoleUpstream, "")
	bare := StartChild(t, RoleBare, up.URL)
	for _, c := range Cases[:2] {
		tm, err := Stream(http.DefaultClient, bare.URL+c.Path, Body(c.API, 1, 0))
		if err != nil || tm.TTFT < First || tm.Total < First+(Chunks-1)*Every {
			t.Errorf("%s through the bare child: %+v, %v; want the paced answer (first chunk after %v)", c.Name, tm, err, First)
		}
	}
	for _, c := range []*Child{bare, up} {
		if _, err := c.Stop(); err != nil {
			t.Error(err)
		}
	}

	var left *Child
	t.Run("not stopped", func(t *testing.T) { left = StartChild(t, RoleUpstream, "") })
	if !left.ended || left.cmd.ProcessState == nil || left.cmd.ProcessState.Success() {
		t.Errorf("a child its test did not stop: ended %v, state %v; want it killed at the test's end", left.ended, left.cmd.ProcessState)
	}

	// A child that ends before it listens fails the test that started it: run in a process of
	// its own, so that its failure is not this test's.
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildren$")
	cmd.Env = append(os.Environ(), "PROXYBENCH_FAILING_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ended before it listened") || !strings.Contains(string(out), "no-such-role") {
		t.Errorf("a child that did not listen: %v\n%s", err, out)
	}
}

// A body of a given size is one valid request of about that size, ending with the question; a
// short one is the question alone.
func TestBodySizes(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, size := range []int{0, 256 << 10} {
			b := Body(api, 7, size)
			var req struct {
				Messages []struct{ Role, Content string } `json:"messages"`
				Stream   bool                             `json:"stream"`
			}
			if err := json.Unmarshal(b, &req); err != nil {
				t.Fatalf("%s %d: %v", api, size, err)
			}
			last := req.Messages[len(req.Messages)-1]
			if !req.Stream || last.Role != "user" || last.Content != "client 7: where is the lock taken?" {
				t.Errorf("%s %d: stream %v, last message %+v", api, size, req.Stream, last)
			}
			if len(b) < size || len(b) > size+2<<10 {
				t.Errorf("%s %d: %d bytes", api, size, len(b))
			}
			if size == 0 && len(req.Messages) != 1 {
				t.Errorf("%s: %d messages in a short request, want 1", api, len(req.Messages))
			}
		}
	}
}

// The nearest-rank percentile of 1..100 ms is its p-th value.
func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := Percentile(ds, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if Mean([]time.Duration{1, 2, 6}) != 3 {
		t.Errorf("Mean(1, 2, 6) = %v, want 3", Mean([]time.Duration{1, 2, 6}))
	}
}

// Through the bare proxy, the paced upstream's answer arrives whole: every content chunk and the
// end marker, in each API; a GET is not an answer.
func TestPacedThroughBare(t *testing.T) {
	up := httptest.NewServer(Paced(0, 0, 3))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	bare := httptest.NewServer(Bare(u))
	defer bare.Close()
	for _, c := range Cases[:2] {
		resp, err := http.Post(bare.URL+c.Path, "application/json", strings.NewReader(string(Body(c.API, 1, 0))))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		end := "data: [DONE]"
		if c.API == "anthropic" {
			end = `"type":"message_stop"`
		}
		if n := strings.Count(string(b), `"tok`); n != 3 || !strings.Contains(string(b), end) {
			t.Errorf("%s: %d content chunks, end marker %v:\n%s", c.Name, n, strings.Contains(string(b), end), b)
		}
		tm, err := Stream(http.DefaultClient, bare.URL+c.Path, Body(c.API, 1, 0))
		if err != nil || tm.TTFT <= 0 || tm.TTFT > tm.Total {
			t.Errorf("%s: Stream = %+v, %v; want a first token before the end", c.Name, tm, err)
		}
	}
	resp, err := http.Get(up.URL + "/api/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET: HTTP %d, want 404", resp.StatusCode)
	}
}
