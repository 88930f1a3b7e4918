package sim_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lab "lab"
	"lab/arms"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/chattemplate"
	"lab/gguf"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/tools"
)

var update = flag.Bool("update", false, "rewrite testdata/family/ from the cached llama-server (with TestFamilyRenderingsLlamaServerLive)")

// familyScenarios are the scenarios whose every request the sim's rendering of each family's
// chat template is checked on against llama-server's: midnight (tools, tool calls and results,
// reasoning, the date crossing midnight), long-compaction (two compactions) and mode-switch
// (mode and plan changes as notes), each under arm spec.
var familyScenarios = []string{"midnight", "long-compaction", "mode-switch"}

// recordedFamily is testdata/family/<family>/<scenario>.json: llama-server's answer for every
// request the sim sent in the scenario with the family's template, in order.
type recordedFamily struct {
	// Server is the llama-server that answered (its /props build).
	Server string `json:"server"`
	// Date is the server's local date when it answered (time.DateOnly): what strftime_now gave
	// a template that writes the date (Llama 3.2's "Today Date"), which the sim's rendering
	// must be given to compare on another day. "" in a recording made before the field (of a
	// template that writes no date).
	Date string `json:"date,omitempty"`
	// Requests are the answers, one per request.
	Requests []recordedRequest `json:"requests"`
}

// recordedRequest is llama-server's answer to one request: its /apply-template prompt (bytes and
// SHA-256), or the template's exception where it answered HTTP 400; and the text the lab's
// llamacpp backend writes into the cache after that prompt for the request's scripted reply
// (llamacpp.Client.ReplyText over /apply-template), where there is one.
type recordedRequest struct {
	Bytes       int    `json:"bytes,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	Error       string `json:"error,omitempty"`
	ReplyBytes  int    `json:"reply_bytes,omitempty"`
	ReplySHA256 string `json:"reply_sha256,omitempty"`
	ReplyError  string `json:"reply_error,omitempty"`
}

// fullTextScenario and fullTextRequest are the request whose whole /apply-template prompt is
// kept as well (testdata/family/<family>/midnight-1.txt), so a difference shows as text:
// midnight's second request (a tool call and its result after the system prompt and tools).
const (
	fullTextScenario = "midnight"
	fullTextRequest  = 1
)

// familyTemplate compiles family f's chat template as chattemplate's testdata recorded it from
// the family's synthetic GGUF (template.jinja, absent for a model without one, and tokens.json);
// ok is false when that testdata has no such family.
func familyTemplate(t *testing.T, f gguf.Family) (tmpl *chattemplate.Template, ok bool) {
	t.Helper()
	dir := filepath.Join("..", "..", "chattemplate", "testdata", string(f))
	b, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	} else if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		BOS    string `json:"bos_token"`
		EOS    string `json:"eos_token"`
		AddBOS bool   `json:"add_bos_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatalf("%s/tokens.json: %v", dir, err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "template.jinja"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	tmpl, err = chattemplate.Compile(string(src), chattemplate.Tokens{BOS: tok.BOS, EOS: tok.EOS, AddBOS: tok.AddBOS})
	if err != nil {
		t.Fatal(err)
	}
	return tmpl, true
}

// sent is one request the sim answered in a session, as the recorder saw it.
type sent struct {
	req   *chat.Request
	reply *chat.Reply
	res   *chat.Result
	err   error
}

// recorder is a sim backend that keeps every request it answered.
type recorder struct {
	*sim.Backend
	sent []sent
}

func (r *recorder) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := r.Backend.Send(ctx, req, reply)
	c := *req
	c.Messages, c.Tools = slices.Clone(req.Messages), slices.Clone(req.Tools)
	r.sent = append(r.sent, sent{req: &c, reply: reply, res: res, err: err})
	return res, err
}

// familySession runs scenario name under arm spec through the sim with tmpl (the tokenizer
// counts bytes: the rendering does not depend on it, nor do the scripted requests) and returns
// what it sent, up to the request that failed, if one did (a template that refuses it).
func familySession(t *testing.T, tmpl *chattemplate.Template, name string, now time.Time) []sent {
	t.Helper()
	got, _ := familySessionRows(t, tmpl, name, now)
	return got
}

// familySessionRows is familySession that also returns the session's rows.
func familySessionRows(t *testing.T, tmpl *chattemplate.Template, name string, now time.Time) ([]sent, []metrics.Sample) {
	t.Helper()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadScenario(filepath.Join("..", "..", "scenarios", name, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := arms.Select(arms.Builtin(), "spec")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
	o := sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, Template: tmpl}
	if !now.IsZero() {
		o.TemplateNow = func() time.Time { return now }
	}
	be, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Backend: be}
	sink := &metrics.MemorySink{}
	err = harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: spec[0], Repetition: 1, RunID: "t", Loop: loop, Backend: rec,
		Tokenizer: be.Tokenizer(), Sink: sink, SandboxDir: t.TempDir(),
		// Tool answers name the sandbox as a lab run does: the same path on every run.
		SandboxShown: tools.ShownSandbox(name),
	})
	if n := len(rec.sent); err != nil && (n == 0 || rec.sent[n-1].err == nil) {
		t.Fatalf("%s: %v", name, err)
	}
	return rec.sent, sink.Samples()
}

// digest is the hex SHA-256 of s.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestFamilyRenderingsAsLlamaServer renders every request of familyScenarios with each family's
// chat template in process (the sim's Rendered, less the start token) and checks it against
// llama-server's /apply-template answer recorded in testdata/family/: the same bytes (length
// and SHA-256, and the whole text for one request), or, where the server refused the request
// (HTTP 400, the template's exception), the sim failing it with the same exception; and the
// text the sim writes into the cache after the prompt against the llamacpp backend's
// (Client.ReplyText over the server's template). Families are those of gguf.Families() that
// chattemplate's testdata holds.
func TestFamilyRenderingsAsLlamaServer(t *testing.T) {
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			tmpl, ok := familyTemplate(t, fam)
			if !ok {
				t.Skipf("chattemplate/testdata has no %s", fam)
			}
			compared, same, refused, replies, replyErrs := 0, 0, 0, 0, 0
			for _, name := range familyScenarios {
				path := filepath.Join("testdata", "family", string(fam), name+".json")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (record with go test -run TestFamilyRenderingsLlamaServerLive -update ./backend/sim/)", err)
				}
				var rec recordedFamily
				if err := json.Unmarshal(b, &rec); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				// The day llama-server rendered the recording, at noon: strftime_now's date.
				var now time.Time
				if rec.Date != "" {
					if now, err = time.ParseInLocation(time.DateOnly, rec.Date, time.Local); err != nil {
						t.Fatalf("%s: date: %v", path, err)
					}
					now = now.Add(12 * time.Hour)
				}
				got := familySession(t, tmpl, name, now)
				if len(got) != len(rec.Requests) {
					t.Errorf("%s: %d requests sent, %d recorded", name, len(got), len(rec.Requests))
				}
				for i := range min(len(got), len(rec.Requests)) {
					g, w := got[i], rec.Requests[i]
					compared++
					if w.Error != "" {
						msg := strings.TrimPrefix(w.Error, "Jinja Exception: ")
						if g.err == nil || !strings.Contains(g.err.Error(), msg) {
							t.Errorf("%s request %d: llama-server refused it (%s); the sim: %v", name, i, w.Error, g.err)
							continue
						}
						refused++
						continue
					}
					var fill *chat.CacheFillError
					if g.err != nil && !errors.As(g.err, &fill) {
						t.Errorf("%s request %d: %v; llama-server rendered %d bytes", name, i, g.err, w.Bytes)
						continue
					}
					text := strings.TrimPrefix(g.res.Rendered, tmpl.StartToken())
					if len(text) != w.Bytes || digest(text) != w.SHA256 {
						t.Errorf("%s request %d: rendered %d bytes (sha256 %s); llama-server %d (%s)", name, i, len(text), digest(text), w.Bytes, w.SHA256)
						continue
					}
					if i == fullTextRequest && name == fullTextScenario {
						full, err := os.ReadFile(filepath.Join("testdata", "family", string(fam), name+"-1.txt"))
						if err != nil || string(full) != text {
							t.Errorf("%s request %d: the recorded full text differs (%v)", name, i, err)
						}
					}
					same++
					switch out := strings.TrimPrefix(g.res.CacheText, g.res.Rendered); {
					case w.ReplyError != "":
						if fill == nil || !strings.Contains(fill.Error(), strings.TrimPrefix(w.ReplyError, "Jinja Exception: ")) {
							t.Errorf("%s request %d: the llamacpp backend cannot write the reply (%s); the sim: %v", name, i, w.ReplyError, g.err)
						} else {
							replyErrs++
						}
					case fill != nil:
						t.Errorf("%s request %d: %v; the llamacpp backend writes %d bytes", name, i, fill, w.ReplyBytes)
					case len(out) != w.ReplyBytes || digest(out) != w.ReplySHA256:
						t.Errorf("%s request %d: reply written as %d bytes (%s); the llamacpp backend writes %d (%s)", name, i, len(out), digest(out), w.ReplyBytes, w.ReplySHA256)
					default:
						replies++
					}
				}
			}
			if same+refused != compared {
				t.Errorf("%d of %d requests as llama-server's", same+refused, compared)
			}
			t.Logf("%s: %d requests compared: %d rendered identically, %d refused by both; %d replies written identically, %d that neither can write", fam, compared, same, refused, replies, replyErrs)
		})
	}
}

// With a chat template the sim's cached tokens equal the harness's expected ones on every request
// where the family's template renders the reply with its end-of-generation token (the cache
// holds what the next request's rendering starts with); gpt-oss's ChatML fallback has none: every
// row warns that the cache fill failed, and each request re-reads only the previous prompt.
func TestFamilyCachedIsExpected(t *testing.T) {
	for _, fam := range []gguf.Family{gguf.Qwen3, gguf.DeepSeekV3, gguf.Llama31, gguf.GPTOSS} {
		tmpl, ok := familyTemplate(t, fam)
		if !ok {
			t.Fatalf("chattemplate/testdata has no %s", fam)
		}
		_, rows := familySessionRows(t, tmpl, "midnight", time.Time{})
		if len(rows) != 48 {
			t.Fatalf("%s: %d rows; want midnight's 48", fam, len(rows))
		}
		beyond := 0 // requests that reuse more than the previous prompt: some of its reply
		for i, r := range rows {
			if r.CachedTokens == nil || r.ExpectedCachedTokens == nil || *r.CachedTokens != *r.ExpectedCachedTokens {
				t.Errorf("%s request %d: cached %v, expected %v", fam, i, r.CachedTokens, r.ExpectedCachedTokens)
				continue
			}
			if fill := strings.Contains(r.Warnings, harness.WarningFillFailed); fill != (fam == gguf.GPTOSS) {
				t.Errorf("%s request %d: warnings %q", fam, i, r.Warnings)
			}
			if i > 0 && *r.CachedTokens > rows[i-1].PromptTokens {
				beyond++
			}
		}
		// A reply in the cache is reused by the next request, up to where the template renders
		// it otherwise (Qwen3 drops an earlier turn's reasoning); without one, never.
		if fam == gguf.GPTOSS && beyond > 0 || fam != gguf.GPTOSS && beyond < len(rows)/2 {
			t.Errorf("%s: %d requests reuse more than the previous prompt", fam, beyond)
		}
	}
}

// New refuses a chat template with another cache model than llama.cpp's, or with breakpoints; a
// templated sim refuses a prompt that does not fit its context, as llama-server does.
func TestTemplatedOptions(t *testing.T) {
	tmpl, _ := familyTemplate(t, gguf.DeepSeekV3)
	vllm, _ := cachesim.NewModel(cachesim.ModelVLLM, cachesim.Options{})
	if _, err := sim.New(sim.Options{Model: vllm, Tokenizer: tinytokenizer.Bytes{}, Template: tmpl}); err == nil || !strings.Contains(err.Error(), "llamacpp") {
		t.Errorf("vllm with a template: %v; want an error naming llamacpp", err)
	}
	m, _ := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
	if _, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, Template: tmpl, CacheBreakpoints: []string{"tools"}}); err == nil {
		t.Error("breakpoints with a template: no error")
	}
	be, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, Template: tmpl, NumCtx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("x", 1024)}}}
	if _, err := be.Send(context.Background(), req, nil); err == nil || !strings.Contains(err.Error(), "exceeds the available context size (1024 tokens)") {
		t.Errorf("a prompt past -c: %v", err)
	}
	req.Messages[0].Content = "hi"
	res, err := be.Send(context.Background(), req, &chat.Reply{Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	// DeepSeek V3's BOS first (its tokenizer adds it; the template's own is removed), the
	// template's user and assistant turns, and the reply up to its end-of-sentence token.
	const bos, eos = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
	if want := bos + "<｜User｜>hi<｜Assistant｜>"; res.Rendered != want || res.CacheText != want+"hello"+eos {
		t.Errorf("rendered %q, cache text %q", res.Rendered, res.CacheText)
	}
	if !strings.Contains(string(res.Body), `"chat_template_kwargs"`) || res.RequestBytes != int64(len(res.Body)) {
		t.Errorf("body %s: want the llamacpp backend's", res.Body)
	}
}

// A reply the model generates (a live request, Generate > 0) carries tool calls without ids,
// which the harness gives them only afterwards: the templated sim still writes the reply into
// the cache, as llama-server's KV cache holds what the model generated.
func TestTemplatedGeneratedToolCall(t *testing.T) {
	for _, fam := range []gguf.Family{gguf.Qwen3, gguf.DeepSeekV3, gguf.Llama32} {
		tmpl, ok := familyTemplate(t, fam)
		if !ok {
			t.Fatalf("chattemplate/testdata has no %s", fam)
		}
		m, _ := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
		be, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, Template: tmpl})
		if err != nil {
			t.Fatal(err)
		}
		be.SetScript([]chat.ScriptGroup{{Replies: []chat.Reply{{ToolCalls: []chat.ToolCall{{Name: "read", Arguments: json.RawMessage(`{"path":"go.mod"}`)}}}}}})
		req := &chat.Request{Generate: 100,
			Tools:    []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
			Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are a coding agent."}, {Role: chat.RoleUser, Content: "Read go.mod."}}}
		res, err := be.Send(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		// DeepSeek V3's template writes an assistant message's calls only when its content is
		// none, and llama-server hands it "": its reply is the end token alone.
		out := strings.TrimPrefix(res.CacheText, res.Rendered)
		if out == res.CacheText || !strings.HasSuffix(out, tmpl.Tokens().EOS) || fam != gguf.DeepSeekV3 && !strings.Contains(out, "go.mod") {
			t.Errorf("%s: the cache holds %q after the prompt; want the generated call up to %q", fam, out, tmpl.Tokens().EOS)
		}
	}
}
