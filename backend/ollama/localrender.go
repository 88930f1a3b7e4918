package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	"github.com/ollama/ollama/model/renderers"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/types/model"

	"lab/internal/wire"
)

// ollamaModule is the Go module whose renderers the client renders with in process.
const ollamaModule = "github.com/ollama/ollama"

// WithLocalRender makes the client render a request's prompt in process, with the renderer
// the server's model names (github.com/ollama/ollama/model/renderers at the version the lab is
// built with), instead of asking the server (`_debug_render_only`), wherever the client is sure
// the server renders the same text: the server's version is the module's, the model renders with a
// built-in renderer (the Modelfile's RENDERER), has no Modelfile SYSTEM or MESSAGE, the request
// has no images, and the prompt, counted with count (the served model's tokenizer: a number
// of tokens), fits num_ctx, so that the server's chatPrompt drops no message. Everything else
// the server's ChatHandler does to the messages before rendering is done alike (v0.17.4
// server/routes.go: `think` on by default for a thinking model, filterThinkTags for the qwen3
// family, the PARSER's Init of the tool list). Every session's first request (the first
// after [Client.Reset], and the client's first) is rendered by the server as well and compared; so is
// any request whose prompt_eval_count differs from count's figure for the text (until the
// server renders one such prompt alike: the tokenizer then counts otherwise, and only session
// starts are checked). A difference
// turns local rendering off for the rest of the client's life, with a warning on that
// request's result, and the row keeps the server's rendering. [Client.RenderSource] says which
// rendered the prompts. A nil count is no local rendering.
func WithLocalRender(count func(string) (int, error)) Option {
	return func(c *Client) { c.local.count = count }
}

// localRender is the state of [WithLocalRender].
type localRender struct {
	count func(string) (int, error)
	// usable is set by [Client.CheckModel] when the model and the server allow it; why says
	// why not, or why it was turned off.
	usable bool
	why    string
	// renderer and parser are the model's RENDERER and PARSER; family its model family
	// (/api/show details.family); thinks whether its capabilities include thinking.
	renderer, parser, family string
	thinks                   bool
	// check is true when the next request must be rendered by the server as well and compared.
	check bool
	// countsOtherwise is true once count gave another figure than the server's
	// prompt_eval_count for a prompt the server rendered alike: the counts no longer check the
	// rendering.
	countsOtherwise bool
}

// moduleVersion is the version of the Ollama Go module the lab is built with ("0.17.4"), from
// the binary's build information; "" when the build records none (a test binary) or replaces
// the module. A test sets it.
var moduleVersion = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == ollamaModule {
			if d.Replace != nil {
				return ""
			}
			return strings.TrimPrefix(d.Version, "v")
		}
	}
	return ""
}()

// setupLocal decides, from the server's version and the model's /api/show answer, whether
// requests may be rendered in process ([WithLocalRender]).
func (c *Client) setupLocal(serverVersion string, show *api.ShowResponse) {
	l := &c.local
	l.usable, l.check = false, true
	l.renderer = c.renderer
	l.parser = cmpOr(show.Parser, modelfileLine(show.Modelfile, "PARSER"))
	l.family = show.Details.Family
	l.thinks = slices.Contains(show.Capabilities, model.CapabilityThinking)
	mod := moduleVersion
	switch {
	case l.count == nil:
		l.why = "no tokenizer to count the prompt with"
	case mod == "" || mod != serverVersion:
		l.why = fmt.Sprintf("the server is Ollama %s, the lab's renderers are module version %q", serverVersion, mod)
	case c.renderer == "":
		l.why = "the model renders with a Go template, not a built-in renderer"
	case show.System != "" || len(show.Messages) > 0:
		l.why = "the model's Modelfile adds a system prompt or messages"
	case show.RemoteHost != "":
		l.why = "a remote model"
	default:
		// A renderer the module does not know fails each local rendering: the server renders.
		l.usable, l.why = true, ""
	}
}

// cmpOr is a if not empty, else b.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RenderSource says where the client renders the prompts it measures, for the run's manifest:
// "server" (each request's `_debug_render_only`), "server (why not in process)" when
// [WithLocalRender] was asked for but cannot be used, or "lab: Ollama <version>'s <renderer>
// renderer in process, …" ([WithLocalRender]). Once a check turned local rendering off, it is
// "server (why)"; the request where that happened carries a warning saying so.
func (c *Client) RenderSource() string {
	l := &c.local
	switch {
	case l.usable:
		return fmt.Sprintf("lab: Ollama %s's %s renderer in process (each session's first prompt, and any whose prompt_eval_count differs from the lab's count, also rendered by the server and compared)", moduleVersion, l.renderer)
	case l.count == nil || l.why == "":
		return "server"
	}
	return "server (" + l.why + ")"
}

// renderLocal returns the prompt the server renders from body, a rendering request's bytes
// ([Client.RequestBodies]), rendered in process as the server's ChatHandler does (v0.17.4,
// server/routes.go and server/prompt.go chatPrompt), and the prompt's token count; ok false
// when the client cannot be sure of it (see [WithLocalRender]), and the server must render it.
func (c *Client) renderLocal(body []byte) (text string, tokens int, ok bool) {
	l := &c.local
	if !l.usable {
		return "", 0, false
	}
	// The messages as the server decodes them from the same bytes.
	var req api.ChatRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		return "", 0, false
	}
	for _, m := range req.Messages {
		if len(m.Images) > 0 {
			return "", 0, false
		}
	}
	if req.Think == nil && l.thinks {
		req.Think = &api.ThinkValue{Value: true}
	}
	msgs := filterThinkTags(req.Messages, l.family, req.Model)
	tools := req.Tools
	if l.parser != "" {
		if p := parsers.ParserForName(l.parser); p != nil {
			tools = p.Init(req.Tools, &msgs[len(msgs)-1], req.Think)
		}
	}
	text, err := renderers.RenderWithRenderer(l.renderer, msgs, tools, req.Think)
	if err != nil {
		return "", 0, false
	}
	n, err := l.count(text)
	if err != nil || n > c.numCtx {
		// chatPrompt would drop the oldest messages until the prompt fits.
		return "", 0, false
	}
	return text, n, true
}

// filterThinkTags is Ollama v0.17.4's server/routes.go filterThinkTags: for a model of the
// qwen3 family (or named deepseek-r1), the <think>…</think> block that starts an assistant
// message's content before the last user message is dropped.
func filterThinkTags(msgs []api.Message, family, name string) []api.Message {
	if family != "qwen3" && model.ParseName(name).Model != "deepseek-r1" {
		return msgs
	}
	finalUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			finalUser = i
		}
	}
	for i, m := range msgs {
		if m.Role == "assistant" && i < finalUser {
			p := &thinking.Parser{OpeningTag: "<think>", ClosingTag: "</think>"}
			_, content := p.AddContent(m.Content)
			msgs[i].Content = content
		}
	}
	return msgs
}

// prompt returns the prompt the server renders from renderBody: rendered in process where the
// client may ([WithLocalRender]), checked against the server's on a session's first request,
// else the server's. local is true for a prompt rendered in process and not checked; warning
// is "" or why local rendering stopped.
func (c *Client) prompt(ctx context.Context, renderBody wire.Body) (text string, local bool, warning string, err error) {
	l := &c.local
	mine, _, ok := c.renderLocal(renderBody.Bytes())
	if ok && !l.check {
		return mine, true, "", nil
	}
	server, err := c.render(ctx, renderBody)
	if err != nil || !ok {
		return server, false, "", err
	}
	l.check = false
	if mine != server {
		return server, false, c.stopLocal(mine, server), nil
	}
	return server, false, "", nil
}

// stopLocal turns local rendering off after it rendered mine where the server rendered server,
// and returns the warning that says so.
func (c *Client) stopLocal(mine, server string) string {
	k := 0
	for k < len(mine) && k < len(server) && mine[k] == server[k] {
		k++
	}
	c.local.usable = false
	c.local.why = fmt.Sprintf("its rendering of a prompt differed from the server's at byte %d of %d", k, len(server))
	return "rendered prompt: the lab's in-process rendering " + c.local.why + "; the server renders every later prompt"
}
