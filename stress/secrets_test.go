//go:build stress

package stress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lab/metrics"
)

// secretSet makes one distinct secret value per credential place, each long and unique enough
// that finding it in a file can only mean it leaked.
func secretSet(prefix string, names ...string) map[string]string {
	s := map[string]string{}
	for i, n := range names {
		s[n] = fmt.Sprintf("%s-%s-%d-%x", prefix, n, i, seed&0xffffffff)
	}
	return s
}

// findSecrets walks every file under roots (and the files given) and returns, for each secret
// found, where: "file: name". A Parquet file may hold a value compressed, so the rows of every
// run folder met are also read back (metrics.ReadRun) and searched as JSON.
func findSecrets(roots []string, secrets map[string]string) []string {
	var found []string
	check := func(path string, b []byte) {
		for name, v := range secrets {
			if bytes.Contains(b, []byte(v)) {
				found = append(found, fmt.Sprintf("%s: %s", filepath.Base(path), name))
			}
		}
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && metrics.IsRunDir(path) {
				if _, rows, err := metrics.ReadRun(path); err == nil {
					b, _ := json.Marshal(rows)
					check(path+" (rows read back)", b)
				}
			}
			return nil
		})
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil {
				check(path, b)
			}
			return nil
		})
	}
	sort.Strings(found)
	return found
}

// byFile sums findSecrets' findings by file: "stderr (5), requests-0001-of-0001.jsonl (5) (5
// distinct values)".
func byFile(found []string) string {
	var files []string
	count := map[string]int{}
	for _, f := range found {
		file, _, _ := strings.Cut(f, ": ")
		if count[file] == 0 {
			files = append(files, file)
		}
		count[file]++
	}
	values := map[string]bool{}
	for _, f := range found {
		_, v, _ := strings.Cut(f, ": ")
		values[v] = true
	}
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = fmt.Sprintf("%s (%d)", f, count[f])
	}
	return fmt.Sprintf("%s (%d distinct values)", strings.Join(parts, ", "), len(values))
}

// echoAll answers with an error that echoes everything the request carried: headers, query
// string and body, as a careless gateway does.
func echoAll(w http.ResponseWriter, r *http.Request, status int) {
	b, _ := io.ReadAll(r.Body)
	var hdr strings.Builder
	for k, v := range r.Header {
		fmt.Fprintf(&hdr, "%s=%s; ", k, strings.Join(v, ","))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error",
		"message": "bad request " + r.URL.String() + " headers " + hdr.String() + " body " + string(b)}})
}

// lab proxy --save-requests between a client sending credentials in every place (Authorization,
// x-api-key, the query's key=, body fields api_key, token, password at depth and inside a tool
// call's arguments) and an upstream that echoes all of them in its errors (and answers every
// third request): no secret value is in any file of the capture, nor in the proxy's stdout and
// stderr.
func TestProxySecretsFound(t *testing.T) {
	sec := secretSet("stressPX", "authorization", "x-api-key", "query-key", "body-api_key", "body-token", "body-password", "args-secret", "nested-client_secret")
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		if n.Add(1)%3 == 0 {
			io.Copy(io.Discard, r.Body)
			chatAnswer(w, false, "ok", 0, 0)
			return
		}
		echoAll(w, r, http.StatusUnauthorized)
	}))
	defer up.Close()
	out := filepath.Join(t.TempDir(), "run_id=secrets")
	proxy, addr := startProxy(t, up.URL, out, "--save-requests")
	args, _ := json.Marshal(fmt.Sprintf(`{"user":"me","secret":%q}`, sec["args-secret"]))
	for i := range 12 {
		body := fmt.Sprintf(`{"model":"m","api_key":%q,"messages":[{"role":"user","content":"task %d"},`+
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"login","arguments":%s}}]},`+
			`{"role":"tool","tool_call_id":"c1","content":"ok"}],`+
			`"metadata":{"auth":{"token":%q,"password":%q,"oauth":{"client_secret":%q}}}}`,
			sec["body-api_key"], i, args, sec["body-token"], sec["body-password"], sec["nested-client_secret"])
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions?key="+sec["query-key"], strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+sec["authorization"])
		req.Header.Set("x-api-key", sec["x-api-key"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	proxy.cmd.Process.Signal(os.Interrupt)
	if _, timedOut := proxy.wait(60 * time.Second); timedOut {
		t.Errorf("lab proxy did not end within 60 s of SIGINT")
	}
	found := findSecrets([]string{out, proxy.outPath, proxy.errPath}, sec)
	files := 0
	filepath.WalkDir(out, func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	note := fmt.Sprintf("%d secret values × 12 requests, %d files of the capture, stdout and stderr", len(sec), files)
	if len(found) > 0 {
		note += "; found in " + byFile(found)
	}
	record("proxy-secrets", "secrets found", "finds", val(float64(len(found))), "0", len(found) == 0, note)
	if len(found) > 0 {
		t.Errorf("secrets written by lab proxy: %v", found)
	}
	if files < 3 {
		t.Errorf("%d files in the capture; want its manifest, part and requests", files)
	}
}

// lab run --backend openai --save-requests with its key in the environment against a server
// that echoes the request's headers and body in a 500 (retried, with progress lines on), then
// in a 401: the key is in no file of the run, nor in stdout or stderr.
func TestRunSecretsFound(t *testing.T) {
	sec := secretSet("stressRUN", "OPENAI_API_KEY")
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		if n.Add(1) == 1 {
			echoAll(w, r, http.StatusInternalServerError) // retried: the retry's line may name the error
			return
		}
		echoAll(w, r, http.StatusUnauthorized)
	}))
	defer up.Close()
	results := t.TempDir()
	c, code, timedOut := runLab(t, 2*time.Minute, []string{"OPENAI_API_KEY=" + sec["OPENAI_API_KEY"]}, "run", "--backend", "openai",
		"--base-url", up.URL+"/v1", "--model", "m", "--scenario", "midnight", "--arm", "spec", "--results", results,
		"--run-id", "secrets", "--save-requests", "--retries", "1")
	if timedOut {
		t.Errorf("lab run did not end within 2 minutes")
	}
	found := findSecrets([]string{results, c.outPath, c.errPath}, sec)
	note := fmt.Sprintf("exit %d after %d requests; the key in the Authorization header, echoed by the server's errors", code, n.Load())
	if len(found) > 0 {
		note += "; found in " + byFile(found)
	}
	record("run-secrets", "secrets found", "finds", val(float64(len(found))), "0", len(found) == 0, note)
	if len(found) > 0 {
		t.Errorf("secrets written by lab run: %v", found)
	}
}
