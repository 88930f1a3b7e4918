// Package openai is the lab's backend for the OpenAI dialects: Chat Completions, which
// llama-server, vLLM, SGLang, DeepSeek, OpenRouter and OpenAI itself speak, and OpenAI's
// Responses API. It also holds the dialect's encodings ([EncodeMessages], [EncodeTools],
// [EncodeInput]), which other backends reuse.
//
// For every request [Client.Send]:
//
//  1. Encodes the conversation the lab's way: the `messages` array with reasoning in the
//     field the server's [Profile] names (reasoning_content, reasoning, or none), present even
//     when empty on DeepSeek's tool-call turns; or, for the Responses API, `input` items with
//     reasoning items passed back as their encrypted_content ([ReasoningBlock]).
//  2. Builds the request body directly, each top-level field encoded once in a fixed order
//     (model, messages or input, stream, tools, the generation bound, stream_options,
//     prompt_cache_key, store and the caller's extra fields, which replace a field of the same
//     name), and posts it through the backends' wire layer (lab/internal/wire) with the key
//     as a bearer token and the profile's headers; the bytes sent are the Result's Body.
//  3. Streams the answer with the smallest generation the API allows (max_tokens 1;
//     max_output_tokens 16 for Responses) and reads every event raw (the wire layer's
//     server-sent event reader), so the untyped fields are seen: vLLM's `reasoning`,
//     DeepSeek's prompt_cache_hit_tokens and prompt_cache_miss_tokens, llama-server's timings.
//     Usage arrives in the last chunk; a count the server did not send stays nil (unknown),
//     never 0, except where the profile says a missing field means 0 (vLLM, SGLang with their
//     cache-report flags).
//
// A live request (chat.Request.Generate > 0, the live driver) is sent with the
// generation bound Generate, the sampling temperature (Options.Temperature, default 0.7) and,
// for Chat Completions, the seed ([Client.SetSeed]; the Responses API has none), and what the
// model wrote comes back in Result.Reply: reasoning, text, tool calls (streamed fragments
// joined by index) and, for the Responses API, the encrypted reasoning items.
//
// The scripted reply is not generated: a cloud API's prompt cache holds prompts, and the next
// request resends the reply as a message. A run starts cold on a cloud API only if its prompts
// start with bytes no earlier request had: [Nonce] gives the line the harness puts first in
// the system prompt.
//
// API keys come from the environment variable the profile names or from a key file, and are
// redacted from every error.
package openai
