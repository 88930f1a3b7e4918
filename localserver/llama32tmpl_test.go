package localserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"lab/chat"
	"lab/chattemplate"
	"lab/gguf"
)

// Ollama's template package (github.com/ollama/ollama/template) is not imported here: it needs a
// module the lab does not otherwise build. These are the parts of its data Llama32OllamaTemplate
// reads (v0.17.4 template.go: templateMessage, templateToolCall with the arguments as a map that
// prints as compact JSON) and its two functions it calls.
type (
	goTmplMessage struct {
		Role, Content string
		ToolCalls     []goTmplCall
	}
	goTmplCall     struct{ Function goTmplFunction }
	goTmplFunction struct {
		Name      string
		Arguments goTmplArgs
	}
	goTmplArgs map[string]any
)

func (a goTmplArgs) String() string { b, _ := json.Marshal(map[string]any(a)); return string(b) }

var goTmplFuncs = template.FuncMap{
	"json":        func(v any) string { b, _ := json.Marshal(v); return string(b) },
	"currentDate": func(...string) string { return time.Now().Format("2006-01-02") },
}

// TestLlama32OllamaTemplate executes Llama32OllamaTemplate with Go's text/template and the
// functions and data shapes of Ollama's template package, and compares with the GGUF's Jinja
// template (chattemplate's recorded copy, rendered today, as currentDate): byte for byte for a
// chat without tools; turn by turn for one with tools, a tool call and its result
// (sameLlama32Format: the JSON's spelling and the Jinja template's trimming aside). The live
// test (TestLlama32OllamaLive) renders on Ollama itself.
func TestLlama32OllamaTemplate(t *testing.T) {
	tmpl, err := template.New("").Option("missingkey=zero").Funcs(goTmplFuncs).Parse(Llama32OllamaTemplate)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "chattemplate", "testdata", string(gguf.Llama32), "template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	jinja, err := chattemplate.Compile(string(src), chattemplate.Tokens{BOS: "<|begin_of_text|>", EOS: "<|eot_id|>", AddBOS: true})
	if err != nil {
		t.Fatal(err)
	}
	noTools := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are terse."}, {Role: chat.RoleUser, Content: "What is 2+2?"},
		{Role: chat.RoleAssistant, Content: "4."}, {Role: chat.RoleUser, Content: "Bye"}}}
	tool := chat.Tool{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"},"offset":{"type":"integer"}}}`)}
	withTools := &chat.Request{Tools: []chat.Tool{tool}, Messages: []chat.Message{{Role: chat.RoleSystem, Content: "Sys"}, {Role: chat.RoleUser, Content: "Read a.go"},
		{Role: chat.RoleAssistant, Content: "dropped", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go","offset":3}`)}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1: package a\n"}, {Role: chat.RoleUser, Content: "Thanks"}}}
	for name, req := range map[string]*chat.Request{"no tools": noTools, "tools": withTools} {
		data := map[string]any{"Messages": goTmplMessages(req)}
		if len(req.Tools) > 0 {
			var tools []map[string]any
			for _, tl := range req.Tools {
				var params map[string]any
				json.Unmarshal(tl.Parameters, &params)
				tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": tl.Name, "description": tl.Description, "parameters": params}})
			}
			data["Tools"] = tools
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := jinja.Render(req, chattemplate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := b.String()
		if name == "no tools" && got != want {
			t.Errorf("%s: %q\nthe Jinja template: %q", name, got, want)
		}
		if why := sameLlama32Format(got, want); why != "" {
			t.Errorf("%s: %s\n got %q\nwant %q", name, why, got, want)
		}
	}
}

// goTmplMessages is req's messages as Ollama's template package gives them to a template.
func goTmplMessages(req *chat.Request) []goTmplMessage {
	var out []goTmplMessage
	for _, m := range req.Messages {
		tm := goTmplMessage{Role: string(m.Role), Content: m.Content}
		for _, tc := range m.ToolCalls {
			var args goTmplArgs
			json.Unmarshal(tc.Arguments, &args)
			tm.ToolCalls = append(tm.ToolCalls, goTmplCall{Function: goTmplFunction{Name: tc.Name, Arguments: args}})
		}
		out = append(out, tm)
	}
	return out
}
