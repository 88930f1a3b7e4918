package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/backend/llamacpp"
	"lab/chat"
	"lab/gguf"
	"lab/localserver"
)

// TestFamilyRenderingsLlamaServerLive starts the cached llama-server (lab server prepare --server
// llamacpp) on each family's synthetic model (lab server prepare --family all), one at a time on
// a free loopback port, sends the body of every request the sim sent in familyScenarios (the
// llamacpp backend's, Result.Body) to /apply-template, and checks the sim's rendering against the
// answer, and the sim's reply text against the llamacpp backend's (Client.ReplyText) on the same
// server; it also checks that testdata/family/ holds those answers, or with -update rewrites it.
// Skipped by -short and when the server or a family's model is not in the cache.
func TestFamilyRenderingsLlamaServerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real llama-server per family")
	}
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	lp, ok := localserver.CachedLlamaServer(cache)
	if !ok {
		t.Skipf("llama-server %s is not in the cache %s (lab server prepare --server llamacpp fetches it)", localserver.LlamaCppVersion, cache)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			tmpl, ok := familyTemplate(t, fam)
			if !ok {
				t.Skipf("chattemplate/testdata has no %s", fam)
			}
			models, _ := filepath.Glob(filepath.Join(cache, "models", "lab-"+string(fam)+"-synth-*.gguf"))
			if len(models) == 0 {
				t.Skipf("no synthetic %s model in the cache (lab server prepare --family %s)", fam, fam)
			}
			prep, err := localserver.PrepareModel(ctx, localserver.Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: fam}})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: lp.Binary, Model: prep.GGUF, Dir: t.TempDir(), CtxSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			client, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			version, err := client.Version(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "family", string(fam))
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// A template that writes the date (strftime_now: Llama 3.2's "Today Date") renders
			// otherwise on another day: its recordings keep the day, and are compared with the
			// server's answers only on that day.
			dated := strings.Contains(tmpl.Source(), "strftime_now")
			for _, name := range familyScenarios {
				// The server renders strftime_now with its local time, as the sim does by default.
				got := familySession(t, tmpl, name, time.Time{})
				rec := recordedFamily{Server: version}
				if dated {
					rec.Date = time.Now().Format(time.DateOnly)
				}
				same := 0
				for i, g := range got {
					var r recordedRequest
					prompt, err := client.Render(ctx, g.res.Body)
					if err != nil {
						if r.Error = jinjaError(err); r.Error == "" {
							t.Fatalf("%s request %d: %v", name, i, err)
						}
						rec.Requests = append(rec.Requests, r)
						if g.err == nil || !strings.Contains(g.err.Error(), strings.TrimPrefix(r.Error, "Jinja Exception: ")) {
							t.Errorf("%s request %d: llama-server refused it (%s); the sim: %v", name, i, r.Error, g.err)
						} else {
							same++
						}
						continue
					}
					r.Bytes, r.SHA256 = len(prompt), digest(prompt)
					if g.reply != nil {
						out, err := client.ReplyText(ctx, g.req, prompt, g.reply)
						if err != nil {
							if r.ReplyError = jinjaError(err); r.ReplyError == "" {
								r.ReplyError = err.Error()
							}
						} else {
							r.ReplyBytes, r.ReplySHA256 = len(out), digest(out)
						}
						if sim := strings.TrimPrefix(g.res.CacheText, g.res.Rendered); err == nil && sim != out {
							t.Errorf("%s request %d: the sim writes a reply of %d bytes, the llamacpp backend %d", name, i, len(sim), len(out))
						}
					}
					rec.Requests = append(rec.Requests, r)
					if text := strings.TrimPrefix(g.res.Rendered, tmpl.StartToken()); text != prompt {
						t.Errorf("%s request %d: the sim rendered %d bytes, llama-server %d (sim error %v)", name, i, len(text), len(prompt), g.err)
					} else {
						same++
					}
					if *update && i == fullTextRequest && name == fullTextScenario {
						if err := os.WriteFile(filepath.Join(dir, name+"-1.txt"), []byte(prompt), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				t.Logf("%s/%s: %d requests, %d as llama-server's", fam, name, len(got), same)
				path := filepath.Join(dir, name+".json")
				b := encodeRecorded(t, rec)
				if *update {
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
				} else if old, err := os.ReadFile(path); err != nil {
					t.Errorf("%s: %v (run with -update)", path, err)
				} else if was := (recordedFamily{}); json.Unmarshal(old, &was) == nil && was.Date != rec.Date {
					t.Logf("%s: recorded on %s, the server renders today's date: not compared", path, was.Date)
				} else if string(old) != string(b) {
					t.Errorf("%s: testdata differs from the server's answers now (run with -update)", path)
				}
			}
		})
	}
}

// encodeRecorded is rec as testdata/family/ keeps it: one request a line.
func encodeRecorded(t *testing.T, rec recordedFamily) []byte {
	t.Helper()
	var b strings.Builder
	line := func(v any) string {
		var l strings.Builder
		enc := json.NewEncoder(&l)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(l.String(), "\n")
	}
	b.WriteString(`{"server": ` + line(rec.Server))
	if rec.Date != "" {
		b.WriteString(`, "date": ` + line(rec.Date))
	}
	b.WriteString(`, "requests": [` + "\n")
	for i, r := range rec.Requests {
		b.WriteString(line(r))
		if i < len(rec.Requests)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// jinjaError is the template's exception in llama-server's HTTP 400 answer err (its "Jinja
// Exception:" line, without the error type the lab's error text adds), or "" when err is not
// such an answer.
func jinjaError(err error) string {
	var api *chat.APIError
	if !errors.As(err, &api) || api.StatusCode != 400 {
		return ""
	}
	for _, line := range strings.Split(api.Body, "\n") {
		if i := strings.Index(line, "Jinja Exception:"); i >= 0 {
			// The lab's error text ends with the answer's error type.
			return strings.TrimSuffix(strings.TrimSpace(line[i:]), " (invalid_request_error)")
		}
	}
	return ""
}
