package capture

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lab/metrics"
)

// Close does not hang on a handler that cannot return (blocked writing to a client that reads
// nothing, on a server still running): past unwindWait its request is recorded with what it
// holds, as stopped by the proxy.
func TestCloseRecordsAHandlerThatCannotReturn(t *testing.T) {
	defer func(d time.Duration) { unwindWait = d }(unwindWait)
	unwindWait = 200 * time.Millisecond
	big := strings.Repeat("x", 64<<20) // more than the sockets' buffers hold
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"` + big + `"}}]}`))
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := New(Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if _, err := conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing: wait until the answer is under way.
	for {
		p.mu.Lock()
		var size int
		for ex := range p.inflight {
			ex.mu.Lock()
			size = ex.size
			ex.mu.Unlock()
		}
		p.mu.Unlock()
		if size > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the sockets' buffers fill
	p.Stopping()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Close took %v", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a handler that cannot return")
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Error != "the proxy was stopped before the answer ended" {
		t.Fatalf("rows %d (%+v); want one, stopped by the proxy", len(rows), rows)
	}
}
