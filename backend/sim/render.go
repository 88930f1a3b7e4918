package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
)

// renderer renders chat requests as Ollama v0.17.4's qwen3.5 renderer does
// (github.com/ollama/ollama/model/renderers, qwen3vl.go: Qwen3VLRenderer with thinking on and an
// empty think block when it is off), one message at a time, and remembers each piece with what
// it depended on, so that a session's request renders only what changed: the system turn (the
// system prompt and the tool list) is rendered again only when either changed, and message i
// only when it is not the previous request's message i or when what the template looks at
// around it changed (the thinking switch; whether it comes after the last user query, which
// decides whether an assistant message keeps its reasoning; whether it is the last message;
// whether the messages next to it are tool results). The text is byte for byte the renderer's
// ([renderers.RenderWithRenderer] with [Renderer]); the sim's tests check it on every request of
// every scenario under every arm. A conversation with images, which the sim never sends, is
// rendered by Ollama's renderer itself. Not safe for concurrent use.
type renderer struct {
	// head is the system turn, rendered from headOf.
	head   string
	headOf headKey
	headOK bool
	// msgs are the previous request's messages, each with its rendering; spare is the list
	// before it, whose room the next request's list reuses.
	msgs, spare []renderedMessage
}

// headKey is what the system turn depends on: whether the first message is a system message, its
// text, and the tool list as JSON (nil without tools).
type headKey struct {
	hasSys bool
	sys    string
	tools  string
}

// renderedMessage is one message as the renderer rendered it: the message, its surroundings
// (around) and its text.
type renderedMessage struct {
	m      api.Message
	around around
	text   string
}

// around is what a message's rendering depends on besides the message itself, in
// Qwen3VLRenderer.Render.
type around struct {
	thinking   bool // isThinking
	afterQuery bool // i > lastQueryIndex
	first      bool // i == 0
	last       bool // i == len(messages)-1
	prevTool   bool // messages[i-1].Role == "tool"
	nextTool   bool // messages[i+1].Role == "tool"
}

// Render returns the rendering of msgs and tools with think, as
// renderers.RenderWithRenderer(Renderer, msgs, tools, think) does, followed by after (the reply
// the cache holds after it, in the same string). toolsJSON is the tool list as JSON
// (json.Marshal of tools), which tells whether the tool list is the one of the system turn
// already rendered.
func (r *renderer) Render(msgs []api.Message, tools []api.Tool, toolsJSON []byte, think *api.ThinkValue, after string) (string, error) {
	for _, m := range msgs {
		if len(m.Images) > 0 {
			text, err := renderers.RenderWithRenderer(Renderer, msgs, tools, think)
			return text + after, err
		}
	}
	isThinking := true
	if think != nil {
		isThinking = think.Bool()
	}
	var key headKey
	if key.hasSys = len(msgs) > 0 && msgs[0].Role == "system"; key.hasSys {
		key.sys = msgs[0].Content
	}
	sameTools := len(tools) == 0 && r.headOf.tools == ""
	if len(tools) > 0 {
		sameTools = r.headOf.tools != "" && r.headOf.tools == unsafeString(toolsJSON)
	}
	if !r.headOK || !sameTools || r.headOf.hasSys != key.hasSys || r.headOf.sys != key.sys {
		if len(tools) > 0 {
			key.tools = string(toolsJSON)
		}
		r.head, r.headOf, r.headOK = systemTurn(msgs, tools, toolsJSON), key, true
	}
	// The last user query: the last user message that is not all of it a tool response, searched
	// from the end while the messages after it are tool responses (multiStepTool).
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		if c := msgs[i].Content; msgs[i].Role == "user" {
			if !(strings.HasPrefix(c, "<tool_response>") && strings.HasSuffix(c, "</tool_response>")) {
				lastQuery = i
				break
			}
		}
	}
	size := len(r.head)
	next := slices.Grow(r.spare[:0], len(msgs))[:len(msgs)]
	for i := range msgs {
		ar := around{
			thinking:   isThinking,
			afterQuery: i > lastQuery,
			first:      i == 0,
			last:       i == len(msgs)-1,
			prevTool:   i > 0 && msgs[i-1].Role == "tool",
			nextTool:   i < len(msgs)-1 && msgs[i+1].Role == "tool",
		}
		next[i] = renderedMessage{m: msgs[i], around: ar}
		if i < len(r.msgs) && r.msgs[i].around == ar && sameMessage(&r.msgs[i].m, &msgs[i]) {
			next[i].text = r.msgs[i].text
		} else {
			next[i].text = renderMessage(&msgs[i], ar)
		}
		size += len(next[i].text)
	}
	var sb strings.Builder
	sb.Grow(size + len(after))
	sb.WriteString(r.head)
	for i := range next {
		sb.WriteString(next[i].text)
	}
	sb.WriteString(after)
	// The list before this one is no longer read: its room takes the next request's, cleared so
	// that it holds no message of a past request.
	clear(r.msgs)
	r.msgs, r.spare = next, r.msgs
	return sb.String(), nil
}

// unsafeString is b as a string without a copy, for a comparison.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sameMessage reports whether a and b render the same: the same role, text, reasoning and tool
// calls (names and arguments; arguments are the same when they are the same parsed value, as
// the Ollama backend's conversion shares them for the same JSON). Neither has images.
func sameMessage(a, b *api.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Thinking != b.Thinking || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i].Function, &b.ToolCalls[i].Function
		if x.Name != y.Name || x.Arguments != y.Arguments {
			return false
		}
	}
	return true
}

// systemTurn is what Qwen3VLRenderer.Render writes before the messages: with tools, the system
// turn holding the system prompt (when the first message is one) and the tool block; without,
// the system prompt's turn, or nothing.
func systemTurn(msgs []api.Message, tools []api.Tool, toolsJSON []byte) string {
	var sb strings.Builder
	if len(tools) > 0 {
		sb.WriteString("<|im_start|>system\n")
		if len(msgs) > 0 && msgs[0].Role == "system" {
			sb.WriteString(msgs[0].Content + "\n\n")
		}
		sb.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		sb.WriteString(toolLines(tools, toolsJSON))
		sb.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	} else if len(msgs) > 0 && msgs[0].Role == "system" {
		sb.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	}
	return sb.String()
}

// renderedTools remembers toolLines' result by the tool list's JSON (string(toolsJSON) →
// string), for every session of the process: the sessions of a matrix send a handful of tool
// lists, each rendered once.
var renderedTools sync.Map

// toolLines returns each tool of tools on a line of its own, as JSON with a space after each
// ':' and ',' (the template's tojson), each line starting with a line feed. toolsJSON is the
// list's JSON (encoding/json's of tools), the key it is remembered by; nil renders it anew.
func toolLines(tools []api.Tool, toolsJSON []byte) string {
	if toolsJSON != nil {
		if v, ok := renderedTools.Load(string(toolsJSON)); ok {
			return v.(string)
		}
	}
	var sb strings.Builder
	for _, tool := range tools {
		sb.WriteString("\n")
		if b, err := marshalWithSpaces(tool); err == nil {
			sb.Write(b)
		}
	}
	out := sb.String()
	if toolsJSON != nil {
		renderedTools.Store(string(toolsJSON), out)
	}
	return out
}

// renderMessage is the body of Qwen3VLRenderer.Render's loop for one message (without images),
// the generation prompt after the last message included.
func renderMessage(message *api.Message, ar around) string {
	var sb strings.Builder
	content := message.Content
	prefill := ar.last && message.Role == "assistant"
	if message.Role == "user" || message.Role == "system" && !ar.first {
		sb.WriteString("<|im_start|>" + message.Role + "\n" + content + "<|im_end|>\n")
	} else if message.Role == "assistant" {
		contentReasoning := ""
		if ar.thinking {
			if message.Thinking != "" {
				contentReasoning = message.Thinking
			}
		}
		if ar.thinking && ar.afterQuery {
			if ar.last || contentReasoning != "" {
				sb.WriteString("<|im_start|>" + message.Role + "\n<think>\n" + strings.Trim(contentReasoning, "\n"))
				if content != "" {
					sb.WriteString("\n</think>\n\n" + strings.TrimLeft(content, "\n"))
				}
			} else {
				sb.WriteString("<|im_start|>" + message.Role + "\n" + content)
			}
		} else {
			sb.WriteString("<|im_start|>" + message.Role + "\n" + content)
		}
		if len(message.ToolCalls) > 0 {
			for j, toolCall := range message.ToolCalls {
				if j > 0 || content != "" {
					sb.WriteString("\n")
				}
				sb.WriteString("<tool_call>\n{\"name\": \"" + toolCall.Function.Name + "\", \"arguments\": ")
				if b, err := marshalWithSpaces(toolCall.Function.Arguments); err == nil {
					sb.Write(b)
				}
				sb.WriteString("}\n</tool_call>")
			}
		}
		if !prefill {
			sb.WriteString("<|im_end|>\n")
		}
	} else if message.Role == "tool" {
		if ar.first || !ar.prevTool {
			sb.WriteString("<|im_start|>user")
		}
		sb.WriteString("\n<tool_response>\n" + message.Content + "\n</tool_response>")
		if ar.last || !ar.nextTool {
			sb.WriteString("<|im_end|>\n")
		}
	}
	if ar.last && !prefill {
		sb.WriteString("<|im_start|>assistant\n")
		if ar.thinking {
			sb.WriteString("<think>\n")
		} else {
			sb.WriteString("<think>\n\n</think>\n\n") // emitEmptyThinkOnNoThink
		}
	}
	return sb.String()
}

// marshalWithSpaces is the renderers package's (model/renderers/json.go): v as JSON with a space
// after each ':' and ',' outside string values.
func marshalWithSpaces(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(b)/8)
	inStr, esc := false, false
	for _, c := range b {
		if inStr {
			out = append(out, c)
			if esc {
				esc = false
				continue
			}
			if c == '\\' {
				esc = true
				continue
			}
			if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			out = append(out, c)
		case ':':
			out = append(out, ':', ' ')
		case ',':
			out = append(out, ',', ' ')
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
