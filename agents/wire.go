package agents

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// secretHeaders are the header names whose values wire.jsonl never holds.
var secretHeaders = map[string]bool{
	"authorization": true, "x-api-key": true, "api-key": true, "cookie": true,
	"proxy-authorization": true, "x-goog-api-key": true,
}

// wireLine is one line of wire.jsonl: a request the agent sent to its endpoint.
type wireLine struct {
	Time    time.Time           `json:"time"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Headers map[string][]string `json:"headers"`
	// Session is the value of the agent's session header or body field; "" when absent.
	Session string `json:"session,omitempty"`
	// BodyBytes is the request body's length.
	BodyBytes int `json:"body_bytes"`
}

// wireSummary is what a front saw, for the agent's Result.
type wireSummary struct {
	requests int
	paths    map[string]int
	headers  []string
	sessions []string
}

// front is a loopback reverse proxy in front of the agent's endpoint that writes one
// wireLine per request (secrets redacted) and forwards it unchanged.
type front struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	f   *os.File
	sum wireSummary
	hdr map[string]bool
}

func startFront(base string, sess Session, path string) (*front, error) {
	target, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	f, ln, err := listenLogging(path)
	if err != nil {
		return nil, err
	}
	fr := &front{url: "http://" + ln.Addr().String(), f: f, sum: wireSummary{paths: map[string]int{}}, hdr: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // streams go through as they arrive
	rp.Transport = &http.Transport{Proxy: nil}
	fr.srv = &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		fr.note(r, body, sess)
		rp.ServeHTTP(w, r)
	})}
	go fr.srv.Serve(ln)
	return fr, nil
}

func (fr *front) note(r *http.Request, body []byte, sess Session) {
	l := wireLine{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.Path, Headers: map[string][]string{}, BodyBytes: len(body)}
	for k, v := range r.Header {
		if secretHeaders[strings.ToLower(k)] {
			v = []string{"(redacted)"}
		}
		l.Headers[strings.ToLower(k)] = v
	}
	l.Session = sessionValue(sess, r.Header, body)
	b, _ := json.Marshal(l)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.f.Write(append(b, '\n'))
	fr.sum.requests++
	fr.sum.paths[r.Method+" "+r.URL.Path]++
	for k := range l.Headers {
		fr.hdr[k] = true
	}
	if l.Session != "" && !contains(fr.sum.sessions, l.Session) {
		fr.sum.sessions = append(fr.sum.sessions, l.Session)
	}
}

// sessionValue is the value of the agent's session identity in one request: the header, or
// the top-level body field (a JSON string), as Session says; "" when absent.
func sessionValue(sess Session, h http.Header, body []byte) string {
	switch sess.Where {
	case "header":
		return h.Get(sess.Name)
	case "body":
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		var s string
		if json.Unmarshal(m[sess.Name], &s) != nil {
			return ""
		}
		return s
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (fr *front) count() int {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.sum.requests
}

func (fr *front) close() wireSummary {
	_ = fr.srv.Close()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.f.Close()
	for k := range fr.hdr {
		fr.sum.headers = append(fr.sum.headers, k)
	}
	sort.Strings(fr.sum.headers)
	return fr.sum
}

// deny is the agent's HTTP(S)_PROXY: it refuses every request (403, and a CONNECT tunnel is
// never opened) and writes the host each one was for into outside.jsonl.
type deny struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	f    *os.File
	seen map[string]int
}

func startDeny(path string) (*deny, error) {
	f, ln, err := listenLogging(path)
	if err != nil {
		return nil, err
	}
	d := &deny{url: "http://" + ln.Addr().String(), f: f, seen: map[string]int{}}
	d.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if r.Method != http.MethodConnect && r.URL.Host != "" {
			host = r.URL.Host
		}
		b, _ := json.Marshal(map[string]any{"time": time.Now().UTC(), "method": r.Method, "host": host})
		d.mu.Lock()
		d.f.Write(append(b, '\n'))
		d.seen[host]++
		d.mu.Unlock()
		http.Error(w, "lab agents: nothing outside loopback", http.StatusForbidden)
	})}
	go d.srv.Serve(ln)
	return d, nil
}

func (d *deny) close() map[string]int {
	_ = d.srv.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.f.Close()
	return d.seen
}

// listenLogging creates the log file at path and a listener on a free loopback port, for a
// recording front or the refusing proxy; on an error nothing is left open.
func listenLogging(path string) (*os.File, net.Listener, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, ln, nil
}
