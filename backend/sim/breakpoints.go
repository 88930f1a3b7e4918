package sim

import (
	"fmt"
	"slices"

	"github.com/ollama/ollama/api"

	"lab/backend/anthropic"
	"lab/cachesim"
)

// The places a request's prompt-cache breakpoints name (chat.Request.CacheBreakpoints, the
// anthropic backend's Breakpoint.At; anthropic.AtMessage's "message N" as lab proxy reads a
// captured request).
const (
	atTools       = anthropic.AtTools
	atSystem      = anthropic.AtSystem
	atLastMessage = anthropic.AtLastMessage
)

// DefaultBreakpoints is where the anthropic backend puts `cache_control` markers in a request
// that names none ([anthropic.DefaultBreakpoints]'s places): the end of the system prompt and of
// the last message.
var DefaultBreakpoints = defaultPlaces()

func defaultPlaces() []string {
	var out []string
	for _, b := range anthropic.DefaultBreakpoints() {
		out = append(out, b.At)
	}
	return out
}

// turn is one turn of the rendered prompt (from one turn marker to the next): the token
// position where it ends and the Messages API content blocks it stands for.
type turn struct {
	end, blocks int
	// msgs are the indexes in the request of the messages rendered in it.
	msgs []int
	// tools and system say that the turn holds the tool list, the leading system prompt.
	tools, system bool
}

// turns maps a rendering to its turns as the qwen3.5 renderer writes them (Ollama
// model/renderers/qwen3vl.go), in the provider's order (see inOrder): a first system turn when
// there are tools or a leading system message (the system prompt, then the tool list), or in
// [cachesim.ToolsThenSystem] with both a tools turn and then the system prompt's; one turn per
// user, assistant or later system message, consecutive tool results sharing one; then the
// generation prompt's turn (not returned). marks are the rendering's turn markers. ok is false
// when the markers do not match the messages (a message whose text holds a turn marker).
//
// Blocks count as the anthropic backend encodes the messages (backend/anthropic EncodeMessages):
// the system prompt one, each tool one; an assistant message one per thinking, text and tool
// call; a tool result or user message one.
func turns(r *rendering, tools []api.Tool, marks []cachesim.TurnMark, order cachesim.RenderOrder) (out []turn, ok bool) {
	first := 0
	hasSystem := len(r.msgs) > 0 && r.msgs[0].Role == "system"
	if order == cachesim.ToolsThenSystem && len(tools) > 0 && hasSystem {
		out = append(out, turn{blocks: len(tools), tools: true}, turn{blocks: 1, msgs: []int{r.orig[0]}, system: true})
		first = 1
	} else if len(tools) > 0 || hasSystem {
		t := turn{blocks: len(tools), tools: len(tools) > 0}
		if hasSystem {
			t.blocks++
			t.msgs = []int{r.orig[0]}
			t.system = true
			first = 1
		}
		out = append(out, t)
	}
	for i := first; i < len(r.msgs); i++ {
		m := r.msgs[i]
		blocks := 1
		if m.Role == "assistant" {
			blocks = len(m.ToolCalls)
			if m.Thinking != "" {
				blocks++
			}
			if m.Content != "" {
				blocks++
			}
		}
		switch {
		case m.Role == "tool" && i > 0 && r.msgs[i-1].Role == "tool" && len(out) > 0:
			out[len(out)-1].blocks += blocks
			out[len(out)-1].msgs = append(out[len(out)-1].msgs, r.orig[i])
		case m.Role == "user", m.Role == "assistant", m.Role == "tool", m.Role == "system":
			out = append(out, turn{blocks: blocks, msgs: []int{r.orig[i]}})
		}
	}
	want := len(out)
	if n := len(r.msgs); n > 0 && r.msgs[n-1].Role != "assistant" {
		want++ // the generation prompt
	}
	if want != len(marks) {
		return nil, false
	}
	for i := range out {
		out[i].end = len(r.tokens)
		if i+1 < len(marks) {
			out[i].end = marks[i+1].Token
		}
	}
	return out, true
}

// placeBreakpoints returns the token positions of the places (see the at* constants) in a
// rendering of turns ts, and warnings for the places it cannot mark (as the anthropic backend
// warns "nothing to mark"). "tools" marks the end of the turn holding the tool list, "system"
// the end of the one holding the system prompt: in the Messages API's order (tools, then
// system: [cachesim.ToolsThenSystem]) two turns, the tools' first; in Qwen3's one turn, so the
// two mark the same place there.
func placeBreakpoints(places []string, ts []turn) (pos []int, warnings []string) {
	messages := ts // the turns of the messages after the tools and the system prompt
	for len(messages) > 0 && (messages[0].tools || messages[0].system) {
		messages = messages[1:]
	}
	for _, p := range places {
		at := -1
		switch {
		case p == atSystem || p == atTools:
			for _, t := range ts[:len(ts)-len(messages)] {
				if p == atSystem && t.system || p == atTools && t.tools {
					at = t.end
				}
			}
		case p == atLastMessage && len(messages) > 0:
			at = messages[len(messages)-1].end
		default:
			n, ok := anthropic.MessageAt(p)
			if !ok {
				break
			}
			for _, t := range ts {
				if slices.Contains(t.msgs, n) {
					at = t.end
				}
			}
		}
		if at < 1 {
			warnings = append(warnings, fmt.Sprintf("cache breakpoint %s: nothing to mark", p))
			continue
		}
		pos = append(pos, at)
	}
	return pos, warnings
}
