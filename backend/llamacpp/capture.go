package llamacpp

import (
	"bytes"
	"encoding/json"
	"fmt"

	"lab/backend/openai"
	"lab/chat"
)

// This file serves `lab proxy` (package capture): it reads the answers llama-server's native
// /completion gave to requests another client sent, with the same figures as [Client.Send]. Its
// /v1/chat/completions answers are read by backend/openai's ChatCapture (llama-server's timings
// included).

// CompletionCapture reads one native POST /completion answer of llama-server: each streamed
// `data:` object or the unstreamed one ([CompletionCapture.Chunk] either way). The figures
// come from the final object's `timings` (cache_n, prompt_n, prompt_ms, predicted_n) and
// `tokens_evaluated` (the whole prompt). The zero value is ready to use.
type CompletionCapture struct {
	content bytes.Buffer
	final   *completionAnswer
	n       int
}

// completionAnswer is one object of a /completion answer (server_task_result_cmpl_partial and
// _final to_json_non_oaicompat in tools/server/server-task.cpp).
type completionAnswer struct {
	Content         string          `json:"content"`
	Stop            bool            `json:"stop"`
	TokensEvaluated *int64          `json:"tokens_evaluated"`
	TokensPredicted *int64          `json:"tokens_predicted"`
	Timings         *openai.Timings `json:"timings"`
	Error           json.RawMessage `json:"error"`
}

// Chunk takes one object of the answer and reports whether it carried generated text.
func (c *CompletionCapture) Chunk(data []byte) (content bool, err error) {
	c.n++
	var a completionAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return false, fmt.Errorf("answer object %d is not JSON: %v: %s", c.n, err, quote(data))
	}
	if len(a.Error) > 0 && string(a.Error) != "null" {
		return false, streamError(a.Error)
	}
	c.content.WriteString(a.Content)
	if a.Stop || a.Timings != nil {
		c.final = &a
	}
	return a.Content != "", nil
}

// End reports whether the answer was whole: nil once its final object (stop: true, or one
// with timings) came; else a *chat.APIError ([chat.CutError], URL empty): "no events" for an
// answer with no object, "no final object (stop: true)".
func (c *CompletionCapture) End() error {
	switch {
	case c.final != nil:
		return nil
	case c.n == 0:
		return chat.CutError(backendName, "", "no events")
	}
	return chat.CutError(backendName, "", "no final object (stop: true)")
}

// Reply returns the generated text.
func (c *CompletionCapture) Reply() *chat.Reply { return &chat.Reply{Content: c.content.String()} }

// Result returns PromptTokens (tokens_evaluated, else timings cache_n + prompt_n), CachedTokens
// (timings.cache_n, source "response"), CompletionTokens (timings.predicted_n, else
// tokens_predicted), Prefill (timings.prompt_ms) and Usage with each wire field.
func (c *CompletionCapture) Result() *chat.Result {
	res := &chat.Result{}
	a := c.final
	if a == nil {
		res.Warnings = append(res.Warnings, "the answer ended without its final object (stop: true): token counts unknown")
		return res
	}
	var t openai.Timings
	if a.Timings != nil {
		t = *a.Timings
	}
	u := &chat.Usage{Fields: map[chat.UsageField]string{}}
	u.Set(chat.UsagePrompt, "tokens_evaluated", a.TokensEvaluated)
	t.SetPrompt(u)
	u.Set(chat.UsageGenerated, "timings.predicted_n", t.PredictedN)
	u.Set(chat.UsageGenerated, "tokens_predicted", a.TokensPredicted)
	apply(res, u, t, "the answer has no timings.cache_n: cached tokens unknown")
	return res
}
