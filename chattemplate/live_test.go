package chattemplate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/chat"
	"lab/gguf"
	"lab/localserver"
)

// TestLlamaServerLive starts the cached llama-server (lab server prepare --server llamacpp) on
// each family's synthetic model (lab server prepare --family all), one at a time on a free
// loopback port, sends every case as the lab's llamacpp backend builds it to /apply-template,
// and checks that Render gives the same bytes (or fails where the server refused) and that
// testdata holds the same answer; with -update it rewrites testdata/<family>/ instead (the
// GGUF's template, its tokens, the answers). With CHATTEMPLATE_REQUESTS naming a file that
// lab run --save-requests wrote, every request in it is compared too (not recorded). Skipped by
// -short and when the server or a family's model is not in the cache.
func TestLlamaServerLive(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			models, _ := filepath.Glob(filepath.Join(cache, "models", "lab-"+string(fam)+"-synth-*.gguf"))
			if len(models) == 0 {
				t.Skipf("no synthetic %s model in the cache (lab server prepare --family %s)", fam, fam)
			}
			prep, err := localserver.PrepareModel(ctx, localserver.Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: fam}})
			if err != nil {
				t.Fatal(err)
			}
			vocab, err := gguf.ReadFamilyVocab(prep.TokenizerDir, fam)
			if err != nil {
				t.Fatal(err)
			}
			tok := Tokens{BOS: vocab.Tokens[vocab.BOS], EOS: vocab.Tokens[vocab.EOS], AddBOS: vocab.AddBOS}
			srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: lp.Binary, Model: prep.GGUF, Dir: t.TempDir(), CtxSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			client, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := Compile(vocab.Template, tok)
			if err != nil {
				t.Fatal(err)
			}
			var day time.Time // the day the recording was made, for a template that writes the date
			if !*update {
				_, _, day = readFamily(t, fam)
			}
			dir := filepath.Join("testdata", string(fam))
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if vocab.Template != "" {
					writeFile(t, filepath.Join(dir, "template.jinja"), vocab.Template)
				}
				var b strings.Builder
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(recordedTokens{BOS: tok.BOS, EOS: tok.EOS, AddBOS: tok.AddBOS, Today: todayIfDated(vocab.Template)}); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "tokens.json"), b.String())
			}
			if path := os.Getenv("CHATTEMPLATE_REQUESTS"); path != "" {
				compareSaved(ctx, t, client, tmpl, path)
			}
			for _, c := range cases {
				req := c.requestFor(t)
				want, serverErr := applyTemplate(ctx, t, client, req, c.noGenerationPrompt)
				got, err := tmpl.Render(req, Options{NoGenerationPrompt: c.noGenerationPrompt})
				engineWant := want
				if c.knownDiff != nil {
					if engineWant = c.knownDiff(want); engineWant == want && serverErr == "" && want != got {
						t.Errorf("%s: the known difference is not in llama-server's answer", c.name)
					}
				}
				switch {
				case serverErr != "" && err == nil:
					t.Errorf("%s: rendered %d bytes; llama-server refused it: %s", c.name, len(got), serverErr)
				case serverErr == "" && err != nil:
					t.Errorf("%s: %v", c.name, err)
				case got != engineWant:
					t.Errorf("%s: %s", c.name, firstDiff(got, engineWant))
				default:
					t.Logf("%s: %d bytes, the same as llama-server's (error %q)", c.name, len(got), serverErr)
				}
				if *update {
					txt, errFile := filepath.Join(dir, c.name+".txt"), filepath.Join(dir, c.name+".err")
					os.Remove(txt)
					os.Remove(errFile)
					if serverErr != "" {
						writeFile(t, errFile, serverErr+"\n")
					} else {
						writeFile(t, txt, want)
					}
					continue
				}
				rec, recErr := readRecorded(t, fam, c)
				if rec != recordedDay(want, day) || (recErr == "") != (serverErr == "") {
					t.Errorf("%s: testdata differs from the server's answer now (run with -update)", c.name)
				}
			}
		})
	}
}

// compareSaved renders every request of a --save-requests file (one JSON object a line, the
// Ollama-shaped request in "body") with tmpl and on the server, and reports each difference.
func compareSaved(ctx context.Context, t *testing.T, client *llamacpp.Client, tmpl *Template, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	same, refused, n := 0, 0, 0
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		req, err := ollama.DecodeChatRequest(rec.Body)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		n++
		want, serverErr := applyTemplate(ctx, t, client, req, false)
		got, err := tmpl.Render(req, Options{})
		switch {
		case serverErr != "" && err != nil:
			refused++
		case serverErr != "" || err != nil:
			t.Errorf("%s:%d: llama-server error %q, Render error %v", path, line, serverErr, err)
		case got != want:
			t.Errorf("%s:%d: %s", path, line, firstDiff(got, want))
		default:
			same++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d requests, %d identical, %d refused by both", path, n, same, refused)
}

// applyTemplate is the server's rendering of req as the llamacpp backend sends it, or the
// first line of the error message it answered with (the request refused).
func applyTemplate(ctx context.Context, t *testing.T, client *llamacpp.Client, req *chat.Request, noGen bool) (prompt, serverErr string) {
	t.Helper()
	body, err := client.ChatBody(req)
	if err != nil {
		t.Fatal(err)
	}
	if noGen {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatal(err)
		}
		fields["add_generation_prompt"] = json.RawMessage("false")
		if body, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
	}
	prompt, err = client.Render(ctx, body)
	var api *chat.APIError
	if errors.As(err, &api) && api.StatusCode == 400 {
		// The template's own exception, after llama-server's "Automatic parser generation
		// failed" preamble: keep the "Jinja Exception" line.
		for _, line := range strings.Split(api.Body, "\n") {
			if i := strings.Index(line, "Jinja Exception:"); i >= 0 {
				return "", strings.TrimSpace(line[i:])
			}
		}
		return "", "HTTP 400"
	}
	if err != nil {
		t.Fatal(err)
	}
	return prompt, ""
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// todayIfDated is today's date (YYYY-MM-DD, local time, as llama-server's strftime_now) for a
// template that writes the date (calls strftime_now), else "".
// recordedDay is the server's answer of today as it was on day, the day its recording was made
// (tokens.json's today; zero for a template that writes no date): today's date replaced by day's
// in the forms templates write it, Llama 3.2's "Today Date: 04 Dec 2026" (strftime_now("%d %b
// %Y")) and 2026-12-04, so that the recording still compares on another day.
func recordedDay(answer string, day time.Time) string {
	now := time.Now()
	if day.IsZero() || now.Format(time.DateOnly) == day.Format(time.DateOnly) {
		return answer
	}
	for _, layout := range []string{"02 Jan 2006", time.DateOnly} {
		answer = strings.ReplaceAll(answer, now.Format(layout), day.Format(layout))
	}
	return answer
}

func todayIfDated(template string) string {
	if !strings.Contains(template, "strftime_now") {
		return ""
	}
	return time.Now().Format(time.DateOnly)
}
