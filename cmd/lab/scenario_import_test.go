package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/capture"
	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
	"lab/scenario"
	"lab/tokenizer"
)

// rowFigures are the figures of a row the capture round trip keeps: prompt, cached and expected
// cached tokens, the divergence, the re-read split, turn and step.
func rowFigures(s metrics.Sample) string {
	v := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("#%d turn %d step %d %s: prompt %d cached %s expected %s divergence %s at %s, reread %s tool-result %s message %s",
		s.RequestIndex, s.Turn, s.Step, s.Kind, s.PromptTokens, v(s.CachedTokens), v(s.ExpectedCachedTokens), s.DivergenceSegment,
		v(s.DivergenceToken), v(s.RereadTokens), v(s.RereadToolResultTokens), v(s.RereadMessageTokens))
}

func readRows(t *testing.T, dir string) []metrics.Sample {
	t.Helper()
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// A capture of a session (lab run --save-requests on the sim), imported with lab scenario
// import --from capture and replayed with the capture-as-sent arm on the sim, gives the
// capture's own rows: every request's prompt, cached and expected cached tokens, divergence
// segment and token, and re-read split. The same scenario also runs under spec and plain.
func TestCaptureRoundTripGivesTheCaptureRows(t *testing.T) {
	for _, sc := range []string{"outside-edit", "compaction-in-loop"} {
		t.Run(sc, func(t *testing.T) {
			dir := t.TempDir()
			res := filepath.Join(dir, "results")
			if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", sc, "--arm", "spec", "--save-requests", "--results", res, "--run-id", "orig"); code != 0 {
				t.Fatalf("lab run: exit %d: %s", code, errOut)
			}
			imp := filepath.Join(dir, "imported")
			code, out, errOut := runLab(t, "scenario", "import", "--from", "capture", filepath.Join(res, "run_id=orig", "requests-0001-of-0001.jsonl"), "-o", imp, "--name", sc+"-imported")
			if code != 0 {
				t.Fatalf("lab scenario import: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "replay their recorded answer") {
				t.Errorf("the import's summary says nothing of recorded answers:\n%s", out)
			}
			if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "capture-as-sent", "--results", res, "--run-id", "replay"); code != 0 {
				t.Fatalf("lab run --arm capture-as-sent: exit %d: %s", code, errOut)
			}
			want, got := readRows(t, filepath.Join(res, "run_id=orig")), readRows(t, filepath.Join(res, "run_id=replay"))
			if len(got) != len(want) {
				t.Fatalf("%d rows replayed, want the capture's %d", len(got), len(want))
			}
			for i := range want {
				if w, g := rowFigures(want[i]), rowFigures(got[i]); w != g {
					t.Errorf("row %d:\n got %s\nwant %s", i, g, w)
				}
			}
			imported, err := scenario.LoadScenario(filepath.Join(imp, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if start := want[0].StartedAt.UTC().Truncate(time.Second); !imported.Start.Equal(start) {
				t.Errorf("the imported clock starts at %s, want the capture's first request's %s", imported.Start, start)
			}
			if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "spec,plain", "--results", res, "--run-id", "arms"); code != 0 {
				t.Fatalf("lab run --arm spec,plain on the imported scenario: exit %d: %s", code, errOut)
			}
			man, err := metrics.ReadRunManifest(filepath.Join(res, "run_id=arms"))
			if err != nil {
				t.Fatal(err)
			}
			if len(man.RecordedAnswers[sc+"-imported"]) == 0 {
				t.Errorf("the manifest names no step replayed from recorded answers: %v", man.RecordedAnswers)
			}
			report, err := os.ReadFile(filepath.Join(res, "run_id=arms", "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(report), "Replayed from recorded answers") {
				t.Errorf("report.md does not say which steps were replayed from recorded answers")
			}
		})
	}
}

// The capture example of the README imports and runs under spec and plain on the sim, and
// with the capture-as-sent arm; lab run refuses capture-as-sent for a scenario that was not
// imported from a capture, and lab scenario import refuses an unknown format and a missing file.
func TestScenarioImportExample(t *testing.T) {
	dir := t.TempDir()
	imp := filepath.Join(dir, "greeter")
	code, out, errOut := runLab(t, "scenario", "import", "--from", "capture", filepath.Join("..", "..", "transcript", "testdata", "capture-example", "requests.jsonl"), "-o", imp)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"scenario greeter:", "calls: 7, 7 of the lab's tools; 3 run on the workspace, 4 replay their recorded answer", "1 files with the content"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	res := filepath.Join(dir, "results")
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "spec,plain,capture-as-sent", "--results", res, "--run-id", "r"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	rows := readRows(t, filepath.Join(res, "run_id=r"))
	per := map[string]int{}
	for _, s := range rows {
		if s.Error != "" {
			t.Errorf("%s request %d: %s", s.Arm, s.RequestIndex, s.Error)
		}
		per[s.Arm]++
	}
	if per["spec"] != 6 || per["plain"] != 6 || per["capture-as-sent"] != 6 {
		t.Errorf("rows per arm %v, want 6 each", per)
	}
	code, _, errOut = runLab(t, "run", "--backend", "sim", "--scenario", "outside-edit", "--arm", "capture-as-sent", "--results", res)
	if code != exitBadInput || !strings.Contains(errOut, "capture-as-sent replays the requests of an imported capture") {
		t.Errorf("capture-as-sent on a built-in scenario: exit %d, %s", code, errOut)
	}
	code, _, errOut = runLab(t, "scenario", "import", "--from", "cursor", "x", "-o", dir)
	if code != exitBadInput || !strings.Contains(errOut, `--from "cursor": want claude-code, codex, capture`) {
		t.Errorf("unknown format: exit %d, %s", code, errOut)
	}
	code, _, errOut = runLab(t, "scenario", "import", "--from", "capture", filepath.Join(dir, "nope.jsonl"), "-o", dir)
	if code != exitBadInput || !strings.Contains(errOut, "nope.jsonl") {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
}

// A capture of lab proxy (lab run through the proxy to a stand-in Ollama with a real prefix
// cache slot, Ollama's renderer and the model's tokenizer), imported and replayed with the
// capture-as-sent arm straight to the same server, gives the proxy's rows: prompt, cached (from
// the server log), expected cached tokens, divergence, re-read split, turn and step.
func TestProxyCaptureRoundTrip(t *testing.T) {
	needTokenizer(t)
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	tokDir, err := localserver.FetchTokenizer(context.Background(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "synth.gguf")
	if err := gguf.WriteModel(model, tokDir, gguf.ModelOptions{HiddenSize: 8, FeedForward: 8, Layers: 1, HeadDim: 8, F16: true}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "server.log")
	os.WriteFile(logPath, nil, 0o644)
	f := &fakeOllama{tok: tok, logPath: logPath}
	up := httptest.NewServer(f.handler(t))
	defer up.Close()
	results := filepath.Join(dir, "results")
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap",
		Label: capture.DefaultLabel, Render: capture.RenderOllama, GGUF: model, NumCtx: gguf.DefaultContextLength, ServerLog: logPath, SaveRequests: true})
	if code, _, stderr := runLab(t, "run", "--server", "http://"+addr, "--server-log", logPath, "--gguf", model,
		"--scenario", "outside-edit", "--arm", "spec", "--results", results, "--run-id", "run", "--quiet"); code != 0 {
		t.Fatalf("lab run: exit %d: %s", code, stderr)
	}
	if err, _, perr := stop(); err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	imp := filepath.Join(dir, "imported")
	if code, _, errOut := runLab(t, "scenario", "import", "--from", "capture", filepath.Join(metrics.RunDir(results, "cap"), "requests-0001-of-0001.jsonl"), "-o", imp); code != 0 {
		t.Fatalf("lab scenario import: exit %d: %s", code, errOut)
	}
	if code, _, stderr := runLab(t, "run", "--server", up.URL, "--server-log", logPath, "--gguf", model,
		"--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "capture-as-sent", "--results", results, "--run-id", "replay", "--quiet"); code != 0 {
		t.Fatalf("lab run --arm capture-as-sent: exit %d: %s", code, stderr)
	}
	want, got := readRows(t, metrics.RunDir(results, "cap")), readRows(t, metrics.RunDir(results, "replay"))
	if len(got) != len(want) || len(want) != 11 {
		t.Fatalf("%d rows replayed, the capture has %d; want 11 each", len(got), len(want))
	}
	for i := range want {
		if want[i].CachedTokens == nil {
			t.Fatalf("capture row %d: no cached tokens", i)
		}
		if w, g := rowFigures(want[i]), rowFigures(got[i]); w != g {
			t.Errorf("row %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// The Claude Code and Codex examples import (their readers' testdata) and run under spec and
// plain on the sim, every row without an error.
func TestScenarioImportAgentExamples(t *testing.T) {
	for _, format := range []string{"claude-code", "codex"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			imp := filepath.Join(dir, "s")
			code, out, errOut := runLab(t, "scenario", "import", "--from", format, filepath.Join("..", "..", "transcript", "testdata", format+"-example.jsonl"), "-o", imp)
			if code != 0 {
				t.Fatalf("import: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "steps: 2 user, 9 assistant") || !strings.Contains(out, "replay their recorded answer") {
				t.Errorf("summary:\n%s", out)
			}
			// The examples plant keys and the recording user's home: none survives.
			for _, name := range []string{"scenario.yaml", "workspace.txtar"} {
				data, err := os.ReadFile(filepath.Join(imp, name))
				if err != nil {
					t.Fatal(err)
				}
				for _, planted := range []string{"sk-ant-", "sk-proj-", "ghp_", "/home/ada"} {
					if strings.Contains(string(data), planted) {
						t.Errorf("%s holds %q", name, planted)
					}
				}
			}
			res := filepath.Join(dir, "results")
			if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "spec,plain", "--results", res, "--run-id", "r"); code != 0 {
				t.Fatalf("run: exit %d: %s", code, errOut)
			}
			rows := readRows(t, filepath.Join(res, "run_id=r"))
			if len(rows) != 18 {
				t.Errorf("%d rows, want 9 per arm", len(rows))
			}
			for _, s := range rows {
				if s.Error != "" {
					t.Errorf("%s request %d: %s", s.Arm, s.RequestIndex, s.Error)
				}
			}
		})
	}
}

// A capture whose line names an API the lab does not decode is refused: by lab scenario import,
// and by lab run --arm capture-as-sent on an imported scenario whose requests.jsonl was edited
// after, each naming the file, the line and the api field's value, never an empty request.
func TestCaptureUnknownAPI(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "transcript", "testdata", "capture-example", "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	imp := filepath.Join(dir, "greeter")
	if code, _, errOut := runLab(t, "scenario", "import", "--from", "capture", filepath.Join("..", "..", "transcript", "testdata", "capture-example", "requests.jsonl"), "-o", imp); code != 0 {
		t.Fatalf("lab scenario import: exit %d: %s", code, errOut)
	}
	lines := strings.SplitAfter(string(src), "\n")
	lines[1] = strings.Replace(lines[1], `"api":"ollama-chat"`, `"api":"gemini-chat"`, 1)
	bad := filepath.Join(dir, "requests.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runLab(t, "scenario", "import", "--from", "capture", bad, "-o", filepath.Join(dir, "other"))
	if want := bad + `:2: gemini-chat request: api "gemini-chat" is not one the lab decodes`; code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("import of an unknown api: exit %d: %s\nwant %s", code, errOut, want)
	}
	replayed := filepath.Join(imp, "requests.jsonl")
	data, err := os.ReadFile(replayed)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.SplitAfter(string(data), "\n")
	edited[2] = strings.Replace(edited[2], `"api":"ollama-chat"`, `"api":"gemini-chat"`, 1)
	if err := os.WriteFile(replayed, []byte(strings.Join(edited, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runLab(t, "run", "--backend", "sim", "--scenario", filepath.Join(imp, "scenario.yaml"), "--arm", "capture-as-sent", "--results", filepath.Join(dir, "results"))
	if want := `requests.jsonl:3: gemini-chat request: api "gemini-chat" is not one the lab decodes (want one of openai-chat,`; code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("capture-as-sent of an unknown api: exit %d: %s\nwant %s", code, errOut, want)
	}
}
