package capture

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"lab/chat"
)

// A message's grouping key costs no buffer per call: 100 keys of a 64 KiB message allocate less
// than 100 KiB in all (a 32 KiB copy buffer per call was 3.2 MiB).
func TestMessageKeyAllocatesNoBuffer(t *testing.T) {
	m := chat.Message{Role: chat.RoleTool, Content: strings.Repeat("x", 64<<10), ToolCallID: "call_1"}
	want := messageKey(m)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		if messageKey(m) != want {
			t.Fatal("the key changed")
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<10 {
		t.Errorf("100 keys of a 64 KiB message allocated %d bytes; want at most 100 KiB", alloc)
	}
}

// 50 clients at once, four requests each, through the proxy's default transport: the upstream
// sees at most one connection per client (and a few over), not one per request beyond the 2
// idle connections http.DefaultTransport keeps per host.
func TestProxyReusesUpstreamConnections(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(t.TempDir(), "run_id=cap"), RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p)
	defer srv.Close()
	const clients, rounds = 50, 4
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range rounds {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				resp, err := hc.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n > clients+clients/5 {
		t.Errorf("%d clients, %d requests each: the upstream saw %d connections; want at most %d", clients, rounds, n, clients+clients/5)
	}
}
