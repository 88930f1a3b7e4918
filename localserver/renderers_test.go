package localserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	"github.com/ollama/ollama/model/renderers"

	"lab/gguf"
)

// The table is every built-in renderer of Ollama v0.17.4 (model/renderers/renderer.go), each
// with an existing parser; checked against Ollama's own renderers and parsers in process: a
// renderer refused exactly when its parser has no tool support, reply ends that the renderer
// writes after a reply in the history (or, without them, Qwen3's thinking generation prompt),
// and reasoning tags exactly where the parser thinks but the history never holds the
// reasoning and the generation prompt opens no tag.
func TestOllamaRenderersAreOllamas(t *testing.T) {
	t.Parallel()
	want := []string{"qwen3-coder", "qwen3-vl-instruct", "qwen3-vl-thinking", "qwen3.5", "cogito", "deepseek3.1", "olmo3", "olmo3.1",
		"olmo3-think", "olmo3-32b-think", "nemotron-3-nano", "functiongemma", "glm-4.7", "glm-ocr", "lfm2", "lfm2-thinking"}
	if got := RendererNames(); !slices.Equal(got, want) {
		t.Fatalf("renderers %q; want Ollama v0.17.4's %q", got, want)
	}
	props := api.NewToolPropertiesMap()
	props.Set("path", api.ToolProperty{Type: api.PropertyType{"string"}, Description: "the path"})
	tools := []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "read", Description: "Read a file.",
		Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"path"}}}}}
	args := api.NewToolCallFunctionArguments()
	args.Set("path", "a.go")
	const reasoning = "I should read a.go first."
	prompt := []api.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Check a.go"}}
	replied := append(slices.Clone(prompt),
		api.Message{Role: "assistant", Thinking: reasoning, ToolCalls: []api.ToolCall{{ID: "c1", Function: api.ToolCallFunction{Name: "read", Arguments: args}}}},
		api.Message{Role: "tool", ToolName: "read", ToolCallID: "c1", Content: "package a"})
	for _, c := range OllamaRenderers() {
		t.Run(c.Renderer, func(t *testing.T) {
			p := parsers.ParserForName(c.Parser)
			if p == nil {
				t.Fatalf("parser %q: not one of Ollama's", c.Parser)
			}
			if (c.NoSessions != "") != !p.HasToolSupport() {
				t.Errorf("NoSessions %q, parser tool support %v; want a reason exactly when the parser has none", c.NoSessions, p.HasToolSupport())
			}
			if c.Family == "" || c.Template == "" || c.Tokens == "" || !strings.Contains(c.Template, c.Renderer+" renderer") {
				t.Errorf("%+v; want a family, a template naming the renderer and a token counter", c)
			}
			standIn := c.Family == gguf.Qwen3 && !strings.HasPrefix(c.Renderer, "qwen3")
			if c.Family == gguf.Qwen3 && (standIn != strings.Contains(c.Tokens, "stand-in") || standIn && !strings.Contains(c.Template, "stand-in")) {
				t.Errorf("template %q, tokens %q; want a stand-in said in both exactly for another model's renderer on the Qwen3 model", c.Template, c.Tokens)
			}
			// Ollama sends a think value only to a parser with thinking (server/images.go Capabilities).
			var think *api.ThinkValue
			if p.HasThinkingSupport() {
				think = &api.ThinkValue{Value: true}
			}
			before, err := renderers.RenderWithRenderer(c.Renderer, prompt, tools, think)
			if err != nil {
				t.Fatal(err)
			}
			after, err := renderers.RenderWithRenderer(c.Renderer, replied, tools, think)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for k < len(before) && k < len(after) && before[k] == after[k] {
				k++
			}
			reply := after[k:]
			if len(c.ReplyEnds) == 0 {
				if !strings.HasSuffix(before, "<|im_start|>assistant\n<think>\n") {
					t.Errorf("no reply ends, generation prompt %q; want Qwen3's thinking one (the reply written as Qwen3 writes it)", tail(before, 40))
				}
			} else if c.NoSessions == "" && !slices.ContainsFunc(c.ReplyEnds, func(e string) bool { return strings.Contains(reply, e) }) {
				t.Errorf("the history's reply %q has none of the reply ends %q", reply, c.ReplyEnds)
			}
			opensTag := strings.HasSuffix(strings.TrimRight(before, "\n"), "<think>")
			wantTags := p.HasThinkingSupport() && c.NoSessions == "" && !strings.Contains(after, reasoning) && !opensTag
			if (c.ReasoningTags[0] != "") != wantTags {
				t.Errorf("reasoning tags %q; want them exactly where the parser thinks (%v), the history drops the reasoning (%v) and the generation prompt opens no tag (%v)",
					c.ReasoningTags, p.HasThinkingSupport(), !strings.Contains(after, reasoning), !opensTag)
			}
		})
	}
	for name, model := range map[string]string{"glm-4.7": "lab-qwen3-glm-4.7-synth", "qwen3.5": "lab-qwen3-synth", "cogito": "lab-deepseek-v3-cogito-synth",
		"deepseek3.1": "lab-deepseek-v3-synth", "functiongemma": "lab-gemma3-synth", "qwen3-coder": "lab-qwen3-qwen3-coder-synth"} {
		if c, err := OllamaChatOfRenderer(name); err != nil || c.ModelName() != model {
			t.Errorf("OllamaChatOfRenderer(%s).ModelName() = %q, %v; want %q", name, c.ModelName(), err, model)
		}
	}
	if _, err := OllamaChatOfRenderer("qwen9"); err == nil || !strings.Contains(err.Error(), "glm-4.7") {
		t.Errorf("an unknown renderer: error %v; want one listing the renderers", err)
	}
	// On another family's model: that family's counter and stand-in, the renderer's reply ends.
	c, err := OllamaChatOfRendererOn("glm-4.7", gguf.DeepSeekV3)
	if err != nil || c.Family != gguf.DeepSeekV3 || c.StandIn != gguf.StandInLlama || !strings.Contains(c.Tokens, "llama.cpp") ||
		!slices.Equal(c.ReplyEnds, []string{glmObservation, glmUser}) || c.ModelName() != "lab-deepseek-v3-glm-4.7-synth" || !strings.Contains(c.Template, "deepseek-v3 model") {
		t.Errorf("glm-4.7 on deepseek-v3: %+v, %v", c, err)
	}
	if _, err := OllamaChatOfRendererOn("glm-4.7", gguf.GPTOSS); err == nil {
		t.Error("glm-4.7 on gpt-oss: no error; want Ollama's refusal of the family")
	}
}
