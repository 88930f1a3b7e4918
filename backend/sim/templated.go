package sim

import (
	"errors"
	"fmt"
	"time"

	"lab/backend/llamacpp"
	"lab/cachesim"
	"lab/chat"
	"lab/chattemplate"
)

// newTemplated is [New] for Options.Template: the sim of llama-server --jinja.
func newTemplated(o Options) (*Backend, error) {
	if n := o.Model.Name(); n != cachesim.ModelLlamaCpp {
		return nil, fmt.Errorf("sim: a chat template stands for llama-server, whose cache is the %s cache model, not %s", cachesim.ModelLlamaCpp, n)
	}
	if o.CacheBreakpoints != nil {
		return nil, errors.New("sim: cache breakpoints are the anthropic cache model's; a chat template stands for llama-server")
	}
	// The client only builds request bodies; it never connects.
	llama, err := llamacpp.New(llamacpp.Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		return nil, err
	}
	// The rendered prompt is tokenized whole, not at Qwen3's turn markers
	// (cachesim.Incremental): another template's text may hold <|im_start|> where the vocabulary
	// has no such special token (ChatML on gpt-oss's). The tokenizer memoises the text between
	// special tokens, so a session still costs about what it appends.
	return &Backend{model: o.Model, tok: &recent{tok: o.Tokenizer}, whole: &recent{tok: o.Tokenizer},
		perToken: o.PrefillPerToken, prefill: o.Prefill, order: cachesim.OrderOf(o.Model.Name()),
		tmpl: o.Template, now: o.TemplateNow, llama: llama, numCtx: o.NumCtx}, nil
}

// sendTemplated is [Backend.Send] with a chat template (Options.Template): what llama-server
// --jinja and the lab's llamacpp backend do with the request, in process.
//
//  1. The body is the llamacpp backend's (llamacpp.Client.ChatBody: Result.Body and
//     RequestBytes).
//  2. The prompt is the template's rendering ([chattemplate.Template.Render], llama-server's
//     /apply-template), the start token the server's tokenizer adds written first
//     ([chattemplate.Template.StartToken]), as the llamacpp backend's Result.Rendered is. A
//     template that raises (Gemma 3's at a tool message) fails the request with its own message,
//     where llama-server answers HTTP 400; a prompt of NumCtx tokens or more fails as llama-server
//     refuses it (exceed_context_size_error).
//  3. The cache model looks the prompt up, and holds afterwards the prompt followed by the reply
//     as llama-server's backend writes it (llamacpp.ReplyTextWith over the same template: the
//     conversation rendered with the reply as an assistant message, cut after the model's
//     end-of-generation token, Tokens.EOS). A reply whose rendering has no such token (the ChatML
//     fallback of a model without a template) leaves the prompt alone in the cache and is the
//     request's *chat.CacheFillError, as the llamacpp backend's failed fill is: the row keeps its
//     figures, with a warning.
//
// The figures are those of [Backend.Send]; there is no window (llama-server does not truncate).
func (b *Backend) sendTemplated(req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	body, err := b.llama.ChatBody(req)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	res := &chat.Result{RequestBytes: int64(len(body)), Body: body}
	if req.Generate > 0 {
		if reply, err = b.scripted(req); err != nil {
			return res, err
		}
		if limit := req.ReplyLimit(); chat.ReplySize(reply) > limit {
			return res, chat.ReplyTooLongError("sim", "in process", limit)
		}
		res.Reply = reply
	}
	text, err := b.tmpl.Render(req, chattemplate.Options{Now: b.templateNow()})
	if err != nil {
		return res, fmt.Errorf("sim: the chat template refuses the request (llama-server answers HTTP 400): %w", err)
	}
	res.Rendered = b.tmpl.StartToken() + text
	prompt, err := b.whole.Encode(res.Rendered)
	if err != nil {
		return res, fmt.Errorf("sim: tokenize the prompt: %w", err)
	}
	if b.numCtx > 0 && len(prompt) >= b.numCtx {
		return res, fmt.Errorf("sim: request (%d tokens) exceeds the available context size (%d tokens), as llama-server refuses it", len(prompt), b.numCtx)
	}
	cached := int64(b.model.Lookup(prompt))
	res.PromptTokens = int64(len(prompt))
	res.CachedTokens, res.CachedSource = &cached, chat.SourceSimulation
	res.Prefill = time.Duration(int64(len(prompt))-cached) * b.perToken
	if b.prefill != nil {
		res.Prefill = b.prefill.Cost(int(cached), len(prompt))
	}
	res.TTFT, res.Total = res.Prefill, res.Prefill
	res.CacheText = res.Rendered
	if reply == nil {
		b.model.Store(prompt, nil)
		return res, nil
	}
	history := func(r *chat.Request) (string, error) {
		return b.tmpl.Render(r, chattemplate.Options{NoGenerationPrompt: true, Now: b.templateNow()})
	}
	out, err := llamacpp.ReplyTextWith(history, b.tmpl.Tokens().EOS, req, text, reply)
	if err != nil {
		b.model.Store(prompt, nil)
		return res, &chat.CacheFillError{Err: fmt.Errorf("sim: generation emulation: %w", err)}
	}
	full, err := b.whole.Encode(res.Rendered + out)
	if err != nil {
		return res, fmt.Errorf("sim: tokenize the reply: %w", err)
	}
	if b.numCtx > 0 && len(full) >= b.numCtx {
		b.model.Store(prompt, nil)
		return res, &chat.CacheFillError{Err: fmt.Errorf("sim: generation emulation: request (%d tokens) exceeds the available context size (%d tokens), as llama-server refuses it", len(full), b.numCtx)}
	}
	// Where the reply's first token merges with the prompt's last, the held prompt is the common
	// part and the rest counts as generated (as in Send).
	n := cachesim.CommonPrefix(prompt, full)
	b.model.Store(full[:n], full[n:])
	res.CacheText = res.Rendered + out
	res.CompletionTokens = int64(len(full) - n)
	return res, nil
}

// templateNow is the time strftime_now formats for this request: Options.TemplateNow's, else now.
func (b *Backend) templateNow() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}
