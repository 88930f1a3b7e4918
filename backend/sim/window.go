package sim

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"lab/cachesim"
)

// turnMarker starts every turn of a Qwen3 prompt; a tokenizer splits at it ([cachesim.TurnMarker]).
const turnMarker = cachesim.TurnMarker

// rendering is a chat request as the server renders it: the messages it kept (msgs), the index
// in the request of each (orig), the text and its tokens, and the text followed by the reply
// chatPrompt was given (withReply; text is its first bytes, one string in memory).
type rendering struct {
	msgs      []api.Message
	orig      []int
	text      string
	tokens    []int32
	withReply string
}

// chatPrompt renders creq (whose tool list's JSON is b.toolsJSON, from encode) as Ollama
// v0.17.4 builds the prompt of a chat request (server/prompt.go chatPrompt, `truncate` on, its
// default): the whole conversation when its tokens fit num_ctx; otherwise, for i = 1, 2, …,
// the system messages among the first i kept in front of messages i… (the oldest dropped),
// until the rendering fits num_ctx or only the last message is left. The text is what
// `_debug_render_only` returns, so the Ollama backend's Rendered is this rendering too. Without
// a window the whole conversation is rendered, by the incremental renderer; the shorter
// renderings a window tries are Ollama's renderer's. reply (the generated text) follows the
// rendering in rendering.withReply.
func (b *Backend) chatPrompt(creq *api.ChatRequest, reply string) (*rendering, error) {
	all := make([]int, len(creq.Messages))
	for i := range all {
		all[i] = i
	}
	r := &rendering{msgs: creq.Messages, orig: all}
	var err error
	if r.withReply, err = b.renderer.Render(creq.Messages, creq.Tools, b.toolsJSON, creq.Think, reply); err != nil {
		return nil, err
	}
	r.text = r.withReply[:len(r.withReply)-len(reply)]
	if b.checkRender {
		if want, err := renderers.RenderWithRenderer(Renderer, creq.Messages, creq.Tools, creq.Think); err != nil || want != r.text {
			return nil, fmt.Errorf("sim: the incremental rendering differs from Ollama's renderer's at byte %d (err %v)", cachesim.CommonPrefixBytes(want, r.text), err)
		}
	}
	if text, err := inOrder(r.text, creq.Messages, creq.Tools, b.order); err != nil {
		return nil, err
	} else if text != r.text {
		r.withReply = text + reply
		r.text = r.withReply[:len(text)]
	}
	if r.tokens, err = b.whole.Encode(r.text); err != nil {
		return nil, err
	}
	n := b.window.NumCtx
	if n <= 0 || len(r.tokens) <= n {
		return r, nil
	}
	last := len(creq.Messages) - 1
	for i := 1; i <= last; i++ {
		var msgs []api.Message
		var orig []int
		for j, m := range creq.Messages[:i] {
			if m.Role == "system" {
				msgs, orig = append(msgs, m), append(orig, j)
			}
		}
		if len(msgs) == i && i < last {
			continue // every message kept (the first i are system messages): the rendering that did not fit
		}
		msgs, orig = append(msgs, creq.Messages[i:]...), append(orig, all[i:]...)
		text, err := renderers.RenderWithRenderer(Renderer, msgs, creq.Tools, creq.Think)
		if err == nil {
			text, err = inOrder(text, msgs, creq.Tools, b.order)
		}
		if err != nil {
			return nil, err
		}
		count, err := b.counter.count(text)
		if err != nil {
			return nil, err
		}
		if count <= n || i == last {
			r = &rendering{msgs: msgs, orig: orig, text: text, withReply: text + reply}
			if r.tokens, err = b.whole.Encode(text); err != nil {
				return nil, err
			}
			return r, nil
		}
	}
	return r, nil // a single message: Ollama keeps it whole, the runner truncates it
}

// turnCounter counts the tokens of a rendered prompt turn by turn, remembering each turn's
// count: chatPrompt tokenizes many renderings that differ only in the turns they leave out. The
// count is exactly the tokenizer's, since a tokenizer splits at the turn marker.
type turnCounter struct {
	tok    Tokenizer
	counts map[string]int
}

// counterLimit bounds the turns a turnCounter remembers; past it, it starts again.
const counterLimit = 1 << 14

func (c *turnCounter) count(text string) (int, error) {
	if c.counts == nil || len(c.counts) > counterLimit {
		c.counts = map[string]int{}
	}
	total := 0
	for len(text) > 0 {
		end := cachesim.PieceEnd(text)
		piece := text[:end]
		n, ok := c.counts[piece]
		if !ok {
			ids, err := c.tok.Encode(piece)
			if err != nil {
				return 0, err
			}
			n = len(ids)
			c.counts[strings.Clone(piece)] = n
		}
		total += n
		text = text[end:]
	}
	return total, nil
}
