package capture

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heapInUse returns the heap in use after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// What the capture keeps per conversation does not hold its text: 20 conversations of one
// 512 KiB message each leave less than a tenth of their 10 MiB held once recorded (the proxy
// still open). A conversation kept its first and last requests' messages whole (for grouping)
// and its last request's parts (for the divergence without a rendering): twice the text of
// every conversation for as long as the capture ran.
func TestCaptureKeepsNoTextPerConversation(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(t.TempDir(), "run_id=cap"), RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p)
	defer srv.Close()
	const convs, size = 20, 512 << 10
	var before uint64
	for i := range convs + 1 {
		n := size
		if i == 0 { // a small first row: the samples file's buffers are the capture's, not a row's
			n = 1
		}
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%d %s"}]}`, i, strings.Repeat("x", n))
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i == 0 {
			for p.Samples() < 1 {
				time.Sleep(time.Millisecond)
			}
			before = heapInUse()
		}
	}
	for p.Samples() < convs+1 {
		time.Sleep(time.Millisecond)
	}
	if n := len(p.rec.groups.records) - 1; n != convs {
		t.Fatalf("%d conversations; want %d", n, convs)
	}
	after := heapInUse()
	if held, limit := int64(after)-int64(before), int64(convs*size/10); held > limit {
		t.Errorf("%d conversations of %d bytes each hold %d bytes once recorded; want at most %d", convs, size, held, limit)
	}
}

// A request body is read into memory once, not grown by doubling: while 8 requests of 2 MiB
// each wait on a stalled upstream, the proxy has allocated less than 1.25 times their bytes.
// io.ReadAll grows its buffer by doubling: about 2.5 times the body's size allocated.
func TestProxyReadsARequestBodyOnce(t *testing.T) {
	const reqs, size = 8, 2 << 20
	arrived := make(chan struct{}, reqs)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(t.TempDir(), "run_id=cap"), RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := bigChatBody(size)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{}, reqs)
	for range reqs {
		go func() {
			defer func() { done <- struct{}{} }()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	for range reqs {
		<-arrived
	}
	runtime.ReadMemStats(&after)
	close(release)
	for range reqs {
		<-done
	}
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(reqs*len(body))*5/4; alloc > limit {
		t.Errorf("%d requests of %d bytes in flight: %d bytes allocated; want at most %d", reqs, len(body), alloc, limit)
	}
}

// A request that declares a long body (Content-Length 64 MiB) and sends 9 bytes of it costs
// the proxy memory for what came, not for what it declared: readBody allocates as the bytes
// arrive.
func TestDeclaredLengthIsNotAllocatedBeforeItsBytes(t *testing.T) {
	const declared = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body, over, err := readBody(strings.NewReader(`{"model":`), declared, DefaultMaxRequestBytes)
	runtime.ReadMemStats(&after)
	if body != nil || over || err != io.ErrUnexpectedEOF {
		t.Errorf("9 bytes of a declared %d: body %d bytes, over %v, err %v; want no body, io.ErrUnexpectedEOF", declared, len(body), over, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("9 bytes of a declared %d-byte body: %d bytes allocated; want at most 1 MiB", declared, alloc)
	}
}

// A body read whole, with or without its declared length, in reads of any size: the body's
// bytes, nothing more or less, and memory of little more than its size when it is long.
func TestReadBodyWhole(t *testing.T) {
	for _, n := range []int{0, 1, 100, 64 << 10, 64<<10 + 1, 300 << 10, 2 << 20, 5<<20 + 3} {
		want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, declared := range []bool{true, false} {
			length := int64(-1)
			if declared {
				length = int64(n)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, over, err := readBody(&smallReads{r: bytes.NewReader(want)}, length, DefaultMaxRequestBytes)
			runtime.ReadMemStats(&after)
			if err != nil || over || !bytes.Equal(got, want) {
				t.Errorf("%d bytes (declared %v): %d bytes read, over %v, err %v", n, declared, len(got), over, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; declared && n >= 1<<20 && alloc > uint64(n)*5/4 {
				t.Errorf("%d bytes declared: %d bytes allocated; want at most 1.25 times the body", n, alloc)
			}
			if declared && n > 0 {
				if _, _, err := readBody(bytes.NewReader(want[:n-1]), length, DefaultMaxRequestBytes); err == nil {
					t.Errorf("%d of %d declared bytes: no error", n-1, n)
				}
			}
		}
	}
}

// smallReads reads at most 1000 bytes a call, as a client's body arrives.
type smallReads struct{ r io.Reader }

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 1000)]) }
