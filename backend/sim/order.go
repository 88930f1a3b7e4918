package sim

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"lab/cachesim"
)

// The Qwen3 chat template's system turn (Ollama model/renderers/qwen3vl.go): with tools it
// opens with imStart, writes the system prompt and a blank line, then the tool block, which
// begins with toolsHead and ends the turn with imEnd.
const (
	imStart   = "<|im_start|>system\n"
	imEnd     = "<|im_end|>\n"
	toolsHead = "# Tools\n\n"
)

// inOrder rewrites a qwen3.5 rendering of msgs and tools into the provider's order (see
// [cachesim.RenderOrder]). [cachesim.SystemThenTools] is the template's own order: text as it
// is. [cachesim.ToolsThenSystem] (Anthropic) moves the tool block out of the system turn into a
// system turn of its own before it:
//
//	<|im_start|>system\n# Tools … </tool_call><|im_end|>\n<|im_start|>system\nSYSTEM<|im_end|>\n…
//
// so the cache prefix is the tools, then the system prompt, then the messages, each turn ending
// where a breakpoint on it ends. Without a leading system message or without tools the
// rendering is already in that order. The tool block cannot hold imEnd (the renderer writes the
// tools as JSON, which escapes "<" and ">"); a rendering whose system turn is not the template's
// is an error.
func inOrder(text string, msgs []api.Message, tools []api.Tool, order cachesim.RenderOrder) (string, error) {
	if order != cachesim.ToolsThenSystem || len(tools) == 0 || len(msgs) == 0 || msgs[0].Role != "system" {
		return text, nil
	}
	head := imStart + msgs[0].Content + "\n\n"
	rest, ok := strings.CutPrefix(text, head)
	if !ok || !strings.HasPrefix(rest, toolsHead) {
		return "", fmt.Errorf("sim: the rendered system turn does not start with the system prompt and the tool block")
	}
	j := strings.Index(rest, imEnd)
	if j < 0 {
		return "", fmt.Errorf("sim: the rendered tool block has no end")
	}
	j += len(imEnd)
	return imStart + rest[:j] + imStart + msgs[0].Content + imEnd + rest[j:], nil
}
