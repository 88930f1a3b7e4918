package capture_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/capture"
	"lab/metrics"
)

// A credential-named field is redacted at any depth, by its name in any spelling; its value is
// returned as a secret; names that only look alike (prompt_cache_key, max_tokens, a thinking
// block's signature) and a tool schema's "password" property are kept; the rest is kept byte for
// byte.
func TestRedactBody(t *testing.T) {
	in := `{"model":"m", "api_key" : "sk-one","max_tokens":5,"prompt_cache_key":"conv-1",` +
		`"metadata":{"auth":{"accessToken":"tok-two","type":"bearer"}},"extra":[{"Password":12345678},{"client-secret":"s\u003cthree"}],` +
		`"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig-kept"}]}],` +
		`"tools":[{"type":"function","function":{"name":"login","parameters":{"properties":{"password":{"type":"string"}}}}}],"OPENAI_API_KEY":"sk-four","token":null}`
	want := `{"model":"m", "api_key" : "[redacted]","max_tokens":5,"prompt_cache_key":"conv-1",` +
		`"metadata":{"auth":{"accessToken":"[redacted]","type":"bearer"}},"extra":[{"Password":"[redacted]"},{"client-secret":"[redacted]"}],` +
		`"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig-kept"}]}],` +
		`"tools":[{"type":"function","function":{"name":"login","parameters":{"properties":{"password":{"type":"string"}}}}}],"OPENAI_API_KEY":"[redacted]","token":null}`
	got, secrets := capture.RedactBody([]byte(in))
	if string(got) != want {
		t.Errorf("RedactBody:\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("the redacted body is not JSON: %s", got)
	}
	wantSecrets := []string{"sk-one", "tok-two", "12345678", "s<three", `s\u003cthree`, "sk-four"}
	if fmt.Sprint(secrets) != fmt.Sprint(wantSecrets) {
		t.Errorf("secrets %q; want %q", secrets, wantSecrets)
	}
	// A tool call's arguments are JSON in a string (OpenAI): redacted inside, kept a string.
	args := `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"login","arguments":"{\"user\":\"u\",\"password\":\"hunter22\"}"}}]},{"role":"user","content":"[1, 2]"}]}`
	wantArgs := `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"login","arguments":"{\"user\":\"u\",\"password\":\"[redacted]\"}"}}]},{"role":"user","content":"[1, 2]"}]}`
	if got, secrets := capture.RedactBody([]byte(args)); string(got) != wantArgs || fmt.Sprint(secrets) != "[hunter22]" {
		t.Errorf("RedactBody of tool call arguments:\n got %s, %q\nwant %s, [hunter22]", got, secrets, wantArgs)
	}
	if got, secrets := capture.RedactBody([]byte("not json api_key=x")); string(got) != "not json api_key=x" || secrets != nil {
		t.Errorf("a body that is not JSON: %q, %q; want it unchanged and no secret", got, secrets)
	}
	if s := capture.Redact(`echo: {"client-secret":"s\u003cthree"} and s<three, s%3Cthree`, secrets); s != `echo: {"client-secret":"[redacted]"} and [redacted], [redacted]` {
		t.Errorf("Redact: %q", s)
	}
}

// Credentials in a request body's fields, nested or not, and echoed by the upstream in its
// error, are redacted from the saved requests, the rows, the progress lines and every file of
// the capture; a secret seen in one request is redacted from a later request's echo too. The
// client gets the upstream's answer unchanged.
func TestProxyRedactsCredentialsInTheBody(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(b))
		echo := strings.Join(seen, " | ")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "bad request: " + echo}})
	}))
	defer up.Close()
	var progress bytes.Buffer
	url, dir, stop := startProxy(t, up.URL, &progress, true)
	first := `{"model":"m","api_key":"sk-body-SECRETKEY-1","messages":[{"role":"user","content":"hi"}],` +
		`"metadata":{"user":{"credentials":{"token":"tok-SECRETKEY-2"}}},"extra_body":[{"password":"pw\u003cSECRETKEY\u003e&3"}],"client_secret":"cs/SECRETKEY+4"}`
	second := `{"model":"m","messages":[{"role":"user","content":"hi again"}]}`
	for _, body := range []string{first, second} {
		code, got := post(t, url, "/v1/chat/completions", body, map[string]string{"Authorization": "", "X-Api-Key": ""})
		if code != http.StatusBadRequest || !strings.Contains(got, "SECRETKEY") {
			t.Errorf("the client got %d %q; want the upstream's echo unchanged", code, got)
		}
	}
	_, rows := stop()
	if len(rows) != 2 {
		t.Fatalf("%d rows; want 2", len(rows))
	}
	for _, r := range rows {
		// The Parquet file may compress its columns: read them back as well.
		if !strings.HasPrefix(r.Error, "HTTP 400: invalid_request_error: bad request: ") || !strings.Contains(r.Error, "[redacted]") ||
			strings.Contains(r.Error+r.Warnings, "SECRETKEY") {
			t.Errorf("row %d error %q; want the echo with its secrets redacted", r.RequestIndex, r.Error)
		}
	}
	noSecret(t, dir, progress.String())
	f, err := os.Open(filepath.Join(dir, metrics.PartRequestsFile(metrics.Shard{Index: 1, Count: 1})))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines int
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var line struct {
			Body struct {
				Model  string `json:"model"`
				APIKey string `json:"api_key"`
			} `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Body.Model != "m" {
			t.Errorf("saved request %q: %v; want the body kept as JSON", sc.Text(), err)
		}
		if lines == 0 && line.Body.APIKey != "[redacted]" {
			t.Errorf("saved api_key %q; want [redacted]", line.Body.APIKey)
		}
	}
	if lines != 2 {
		t.Errorf("%d saved requests; want 2", lines)
	}
}

// FuzzRedactBody feeds any body to RedactBody (the client's bytes are untrusted): it may not
// panic, a JSON body stays JSON, and no returned secret is left in the redacted body.
func FuzzRedactBody(f *testing.F) {
	for _, seed := range []string{
		`{"api_key":"sk-1","a":[{"token":"t-22"},{"password":{"nested":{"secret":"s-333"}}}],"n":{"key":12345}}`,
		`[{"Api-Key" : "x\"y\\z"}, "key", {"key":[1,"two"]}]`,
		`{"key":}`, `"key"`, `{"token":true,"secret":null}`, `not json`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, secrets := capture.RedactBody(body)
		if !json.Valid(body) {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("RedactBody(%q) = %q: not JSON", body, got)
		}
		for _, s := range secrets {
			if len(s) >= 4 && !strings.Contains(capture.Redacted, s) && strings.Contains(capture.Redact(string(got), secrets), s) {
				t.Fatalf("RedactBody(%q) = %q still holds %q", body, got, s)
			}
		}
	})
}

// A credential-named field holding an array (several keys, a key split in parts) has every
// string and number in it redacted, at any depth, objects in it included.
func TestRedactBodyCredentialArray(t *testing.T) {
	in := `{"api_key":["sk-first",["sk-second"],7654321,true,{"kind":"k","token":"tok-third"}],"model":"m"}`
	want := `{"api_key":["[redacted]",["[redacted]"],"[redacted]",true,{"kind":"[redacted]","token":"[redacted]"}],"model":"m"}`
	got, secrets := capture.RedactBody([]byte(in))
	if string(got) != want {
		t.Errorf("RedactBody:\n got %s\nwant %s", got, want)
	}
	if fmt.Sprint(secrets) != "[sk-first sk-second 7654321 k tok-third]" {
		t.Errorf("secrets %q; want [sk-first sk-second 7654321 k tok-third]", secrets)
	}
}

// A credential field holding a scheme and a token ("Bearer sk-…", as an Authorization header
// does) gives the token alone as a secret too: an upstream that echoes only the token has it
// redacted.
func TestRedactBodyBearerValue(t *testing.T) {
	_, secrets := capture.RedactBody([]byte(`{"model":"m","authorization":"Bearer sk-tok-98765"}`))
	if got := capture.Redact(`{"error":"invalid api key sk-tok-98765"}`, secrets); got != `{"error":"invalid api key [redacted]"}` {
		t.Errorf("Redact of the echoed token = %q (secrets %q); want it redacted", got, secrets)
	}
}

// An upstream that echoes the request in an error answer that is not the API's error object is
// quoted in the row's error up to a length: a key the cut falls inside leaves no part of itself
// there (the answer is redacted before it is cut).
func TestEchoedKeyCutByTheErrorQuote(t *testing.T) {
	const key = "sk-LEAKED-0123456789abcdefghij"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(append([]byte("rejected: "), b...))
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	// The key starts 490 bytes into the echo, so a quote of its first 500 bytes cuts it.
	prefix := `{"model":"m","messages":[{"role":"user","content":"`
	pad := strings.Repeat("x", 490-len("rejected: ")-len(prefix)-len(`"}],"api_key":"`))
	body := prefix + pad + `"}],"api_key":"` + key + `"}`
	if i := strings.Index("rejected: "+body, key); i >= 500 || i+len(key) <= 500 {
		t.Fatalf("the key is at %d: the test must put it across byte 500", i)
	}
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if strings.Contains(rows[0].Error, "sk-LEAKED") || !strings.HasPrefix(rows[0].Error, "HTTP 400") {
		t.Errorf("error %q; want HTTP 400 with no part of the key", rows[0].Error)
	}
}

// Plural credential names (a list of keys, a map of secrets) are credential names too.
func TestRedactBodyPluralNames(t *testing.T) {
	in := `{"api_keys":["sk-one-1234"],"openai_api_keys":["sk-two-1234"],"secrets":{"x":"y"},"passwords":["pw-three-1234"],"client_secrets":"cs-four-1234","max_tokens":5}`
	want := `{"api_keys":["[redacted]"],"openai_api_keys":["[redacted]"],"secrets":{"x":"[redacted]"},"passwords":["[redacted]"],"client_secrets":"[redacted]","max_tokens":5}`
	if got, secrets := capture.RedactBody([]byte(in)); string(got) != want {
		t.Errorf("RedactBody:\n got %s (%q)\nwant %s", got, secrets, want)
	}
}

// A credential-named field holding an object (a user and a password under "credentials") has
// every string and number under it redacted, but for the words of a JSON schema (type,
// description, format…): a tool's "password" parameter keeps its schema.
func TestRedactBodyCredentialObject(t *testing.T) {
	in := `{"credentials":{"user":"user-one","pass":"pass-one-1234","nested":{"pin":123456}},` +
		`"tools":[{"parameters":{"properties":{"password":{"type":"string","description":"the user's password","minLength":8}}}}]}`
	want := `{"credentials":{"user":"[redacted]","pass":"[redacted]","nested":{"pin":"[redacted]"}},` +
		`"tools":[{"parameters":{"properties":{"password":{"type":"string","description":"the user's password","minLength":8}}}}]}`
	got, secrets := capture.RedactBody([]byte(in))
	if string(got) != want {
		t.Errorf("RedactBody:\n got %s\nwant %s", got, want)
	}
	if fmt.Sprint(secrets) != "[user-one pass-one-1234 123456]" {
		t.Errorf("secrets %q; want [user-one pass-one-1234 123456]", secrets)
	}
}

// A body's keys (a plural of key) is a credential name, as it is in a URL's query, but for
// tokens (token ids, no credential): the proxy and lab run follow one list.
func TestRedactBodyKeysButNotTokens(t *testing.T) {
	in := `{"keys":["sk-one-1234"],"tokens":[151644,872]}`
	want := `{"keys":["[redacted]"],"tokens":[151644,872]}`
	out, secrets := capture.RedactBody([]byte(in))
	if string(out) != want || len(secrets) != 1 || secrets[0] != "sk-one-1234" {
		t.Errorf("RedactBody(%s) = %s, secrets %q; want %s and the key", in, out, secrets, want)
	}
}
