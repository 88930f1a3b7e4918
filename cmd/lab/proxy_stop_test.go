package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lab/metrics"
)

// lab proxy stopped (Ctrl-C) while its upstream stalls, half the requests before the answer's
// headers, half in the middle of a stream: once its shutdown wait is over, every request it
// forwarded has a row, each cut by the stop.
func TestProxyStoppedWhileTheUpstreamStallsRecordsEveryRequest(t *testing.T) {
	const n = 65
	var seen atomic.Int32
	arrived := make(chan struct{})
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r) // lab proxy asks /api/version whether it is Ollama
			return
		}
		if r.URL.RawQuery == "stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
		}
		if seen.Add(1) == n {
			close(arrived)
		}
		select { // the upstream stalls
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	dir := t.TempDir() + "/run_id=cap"
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, RunDir: dir, RunID: "cap",
		Label: "capture", Quiet: true, shutdownWait: 200 * time.Millisecond})
	var clients sync.WaitGroup
	for i := range n {
		clients.Add(1)
		go func() {
			defer clients.Done()
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"task %d"}]}`, i)
			q := ""
			if i%2 == 0 {
				q = "?stream"
			}
			resp, err := http.Post("http://"+addr+"/v1/chat/completions"+q, "application/json", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	<-arrived
	if err, _, errb := stop(); err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, errb)
	}
	clients.Wait()
	man, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if int(seen.Load()) != n {
		t.Errorf("the upstream got %d requests; %d sent", seen.Load(), n)
	}
	if len(rows) != n || man.Samples != n || !man.Complete {
		t.Fatalf("%d rows (manifest: %d, complete %v) for %d forwarded requests", len(rows), man.Samples, man.Complete, n)
	}
	for _, s := range rows {
		if s.Error != "the proxy was stopped before the answer ended" {
			t.Errorf("%s: error %q; want the proxy's stop", s.Scenario, s.Error)
		}
	}
}
