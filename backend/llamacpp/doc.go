// Package llamacpp is the lab's backend for llama.cpp's llama-server: its OpenAI-compatible
// POST /v1/chat/completions with the server's own fields (`cache_prompt`, `id_slot`,
// `chat_template_kwargs`, `timings`), and its native endpoints /apply-template, /tokenize,
// /completion, /slots and /props (tools/server/README.md of ggml-org/llama.cpp).
//
// For every request [Client.Send] does three things:
//
//  1. It asks the server to render the request with its own chat template: POST /apply-template
//     with the very body the chat request carries (the server parses both through
//     oaicompat_chat_params_parse, so messages, tools and chat_template_kwargs render the same).
//     The prompt text is Result.Rendered.
//  2. It sends the request for real, streamed (`stream_options.include_usage`), with
//     `max_tokens` 1, `cache_prompt` true and `id_slot` pinned (slot 0 by default): the server
//     prefills the prompt against the slot's KV cache, which is what the lab measures. The last
//     chunk's `timings` give cache_n (prompt tokens reused from the cache: Result.CachedTokens,
//     source "response"), prompt_n (tokens prefilled), prompt_ms (Result.Prefill) and
//     predicted_n; `usage.prompt_tokens` is the whole prompt, cached part included, and newer
//     builds (PR #19361, Feb 2026) add `usage.prompt_tokens_details.cached_tokens`. The
//     stream is read as the OpenAI backend reads Chat Completions (the wire layer's
//     server-sent event reader, [openai.ChatCapture]): the message, the end of the stream and
//     the figures (timings first, usage otherwise; prefill progress chunks skipped) are read as
//     `lab proxy` reads a llama-server answer another client received; only llama-server's
//     error objects are read beside, named as this backend's.
//  3. Generation emulation (DESIGN.md, "Generation is emulated faithfully"): after a real
//     generation the slot's cache holds the prompt followed by the tokens the model emitted, in
//     the model's own output format. The client leaves the cache so by a raw POST /completion
//     whose prompt is Rendered followed by the scripted reply as the server's own chat template
//     writes it in history ([Client.ReplyText]: /apply-template of the messages, then of the
//     messages with the reply and a tool result after it; the reply's text runs from the
//     generation prompt to the model's end-of-generation token, /props eos_token), with
//     `n_predict` 0 ("the prompt is evaluated into the cache"), `cache_prompt` true and the same
//     `id_slot`. That text is Result.CacheText; [Options.Output] replaces the server's rendering
//     when set. The request is not a measurement: [Client.Measure] and [Client.FillCache] are
//     the two steps apart, which the harness retries each on its own (harness.CacheFiller).
//
// The streamed request is sent with `Connection: close`: llama-server closes the connection
// after a streamed answer though its headers say keep-alive, and a request sent next on it
// would fail with EOF.
//
// A live request (chat.Request.Generate > 0, the live driver) is a real generation
// instead: step 2 sends `max_tokens` Generate with the live `temperature` (Options.Temperature,
// default 0.7) and `seed` ([Client.SetSeed]), the streamed reasoning_content, content and
// tool_calls become Result.Reply, and step 3 is skipped: the slot's cache holds what the model
// generated. CacheText is Rendered followed by the parsed reply as step 3 writes it (the server
// returns no raw tokens), an approximation when the generation was cut at max_tokens.
//
// A cold start ([Client.Reset]) erases every slot's prompt cache: GET /slots lists the slots,
// POST /slots/{id}?action=erase empties each. llama-server answers every slot action with 501
// unless it was started with --slot-save-path, and GET /slots with 501 when started with
// --no-slots; Reset then fails and says so. Builds with a host-RAM prompt cache (--cache-ram,
// default 8192 MiB, PR #16391) can restore an erased prompt from RAM: start them with
// --cache-ram 0 for cold starts that stay cold (localserver.StartLlamaServer does).
//
// [Client.Tokenizer] counts tokens with the server's own tokenizer (POST /tokenize), and
// [Client.Props] reads GET /props (model path, context size, build).
package llamacpp
