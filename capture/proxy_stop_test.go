package capture_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/capture"
	"lab/metrics"
)

// A proxy stopped while its upstream stalls gives every request it forwarded a row, cut by its
// stop: the server's connections are closed (as lab proxy does once its shutdown wait ends) and
// Close is called at once, while the handlers are still unwinding. Half the requests stall
// before the answer's headers, half in the middle of a stream.
func TestProxyStopRecordsEveryInFlightRequest(t *testing.T) {
	const n = 65
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
		}
		arrived.Done()
		select { // the upstream stalls
		case <-release:
		case <-r.Context().Done():
		}
	})}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(upLn)
	defer up.Close()
	defer close(release)

	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: "http://" + upLn.Addr().String(), Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	var clients sync.WaitGroup
	for i := range n {
		clients.Add(1)
		go func() {
			defer clients.Done()
			q := ""
			if i%2 == 0 {
				q = "?stream"
			}
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"task %d"}]}`, i)
			resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions"+q, "application/json", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	arrived.Wait()
	p.Stopping()
	srv.Close() // connections closed; the handlers unwind on their own
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	clients.Wait()
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows for %d forwarded requests", len(rows), n)
	}
	for _, s := range rows {
		if s.Error != "the proxy was stopped before the answer ended" {
			t.Errorf("%s: error %q; want the proxy's stop", s.Scenario, s.Error)
		}
	}
}
