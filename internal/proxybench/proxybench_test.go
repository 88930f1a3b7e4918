package proxybench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

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
