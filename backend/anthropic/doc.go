// Package anthropic is the lab's backend for the Anthropic Messages API (POST /v1/messages,
// anthropic-version 2023-06-01), in plain net/http with a small server-sent-events reader.
//
// For every request [Client.Send] does this:
//
//  1. It encodes the request: the system prompt as one `system` text block ([System]), the tool
//     list as `tools` ({name, description, input_schema}), the conversation as `messages`
//     ([EncodeMessages]: an assistant message's thinking blocks first, unchanged, with their
//     signatures, so a tool-use loop passes them back as the API requires).
//  2. It places the arm's prompt-cache breakpoints ([Breakpoint]: at most four
//     `cache_control` markers, at the end of the tool list, of the system prompt, of the last
//     message), each with its lifetime ("5m" or "1h").
//  3. It asks for the smallest generation the API allows: max_tokens 1 without thinking; with
//     chat.Request.Think, `thinking: {type: enabled, budget_tokens: B}` with the API's minimum
//     budget B = 1024 and max_tokens B+1 (the API requires max_tokens > budget_tokens).
//  4. It streams the answer and measures it: time to first token (the first content block
//     event; message_start and ping are not content), the total time, and the usage. The
//     message_start event carries usage.input_tokens, cache_read_input_tokens,
//     cache_creation_input_tokens and cache_creation.{ephemeral_5m_input_tokens,
//     ephemeral_1h_input_tokens}; message_delta carries the final, cumulative output_tokens
//     (and, from some servers, cumulative input counts, which then win).
//
// The Messages API's input_tokens EXCLUDES the tokens read from and written to the prompt cache:
// the whole prompt is input_tokens + cache_read_input_tokens + cache_creation_input_tokens
// (https://platform.claude.com/docs/en/build-with-claude/prompt-caching). [Client.Send] reports
// that sum as PromptTokens and cache_read_input_tokens as CachedTokens (source "response"). A
// server that sends no cache_creation_input_tokens (Ollama's /v1/messages, llama-server, vLLM)
// has no cache write to count: the fields it sends add up to the whole prompt. One that sends
// the cache write but not the cache read leaves PromptTokens unknown (0, with a warning).
//
// A live request (chat.Request.Generate > 0, the live driver) is a real generation:
// max_tokens is Generate (with extended thinking it must exceed the thinking budget, else
// [Client.Body] refuses it naming --max-tokens), the sampling temperature (Options.Temperature,
// default 0.7) is sent when the request does not think (the API takes none with thinking), and
// the answer comes back in Result.Reply ([LiveReply]) with its thinking blocks and signatures as
// received. The Messages API has no sampling seed, so the client is no harness.Seeder: the
// repetitions of a live run differ by the API's own sampling only.
//
// The API runs in the cloud: the lab cannot see the rendered prompt (Result.Rendered and
// CacheText stay empty), cannot empty the cache (no Reset) and does not need to emulate the
// generation (the prompt cache holds prompts; the next request resends the scripted reply as a
// message). The server reports no prefill time: Result.Prefill stays 0.
//
// The API key comes from the environment (ANTHROPIC_API_KEY) or a file ([Options].KeyFile). It
// is sent only in the x-api-key header: it is never in Result.Body, and every error has it
// replaced by "[redacted]".
package anthropic
