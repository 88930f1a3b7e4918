// Package capture is `lab proxy`: a pass-through reverse proxy that measures any harness's real
// traffic to a model API with the same per-request columns `lab run` writes for its own harness.
//
// A request flows through it in five steps:
//
//  1. [Proxy.ServeHTTP] sorts the request by method and path: a POST to an OpenAI Chat
//     Completions or Responses endpoint, the Anthropic Messages API, Ollama's /api/chat and
//     /api/generate, or llama-server's /completion is recorded ([APIOpenAIChat] and the others);
//     anything else (model lists, token counting, llama-server's /props, /tokenize, /slots...)
//     is passed through unrecorded, as are requests that only render a prompt (Ollama
//     `_debug_render_only`) or load a model (forwarded as recorded requests are, their body
//     read by the recorder, which then drops them: step 2 decodes nothing). Requests that only
//     fill the server's cache (a llama-server /completion with n_predict 0, a raw Ollama
//     generate with num_predict ≤ 1:
//     the lab's own generation emulation) make no row but are taken by the slot model (step 4)
//     and consume their server log line (step 3); an Ollama unload (/api/generate without a
//     prompt, keep_alive 0) and a llama-server slot erase (POST /slots/{id}?action=erase), lab
//     run's cache resets between sessions, empty the slot model.
//  2. It forwards the request with net/http/httputil.ReverseProxy (FlushInterval -1: every chunk
//     is flushed to the client as it arrives) and tees the answer: each chunk read from the
//     upstream is copied, with the time it arrived, and passed on unchanged. Nothing is parsed
//     or waited for on the way; the recorded request body is read whole before forwarding (it
//     is needed to record the request) but not decoded (its envelope, which says whether the
//     request renders, loads, fills or unloads, is the recorder's to read: a long
//     conversation's decoding is not added to the time to first token), and a recorded request
//     asks the upstream for an uncompressed answer (Accept-Encoding: identity). Credentials
//     (Authorization, x-api-key, api-key, cookies) are forwarded and never written: not to the rows, the manifest, the
//     requests file, nor the progress lines, from which their values are redacted. So are a
//     JSON body's credential-named fields at any depth (api_key, token, password, secret,
//     client_secret, ...: [RedactBody]), replaced in the saved requests, and their values
//     wherever an answer echoes them; every secret seen is redacted from every later row too
//     ([Redact], the one redaction of every writer).
//  3. Once the answer ended, a single recorder goroutine parses it (with [Options].Attribution
//     in the order the requests came, the order a one-slot server took them: a cache fill sent
//     as soon as the client read a stream's end marker may end before that stream) with its backend's own
//     parser (backend/openai, backend/anthropic, backend/ollama, backend/llamacpp capture*.go):
//     prompt, cached (with cached_source), cache write (5-minute and 1-hour), completion and
//     reasoning tokens, usage_fields, time to first token (the arrival of the first chunk that
//     carried generated content, reasoning or a tool call; none for an unstreamed answer), total time, request bytes, model;
//     an upstream error status, an error in the stream, a client that disconnected, a cut
//     stream (one that ended before its end marker: "stream cut: no message_stop"), a stream
//     with no events, an empty 200 or an HTTP 200 that is not the API's answer (an HTML page)
//     is the row's error. The answer's form is told by its Content-Type and first bytes
//     ([chat.SniffAnswer]): a JSON answer to a streamed request is read as the unstreamed
//     one. It decodes the request into a chat.Request with the inverse of
//     the backend's encoder. Ollama (v0.17.4) reports no cached tokens in its API: with
//     [Options].ServerLog (the server's OLLAMA_DEBUG=1 log; `lab proxy` defaults it to the log of
//     the server `lab server start` runs) an Ollama row's cached tokens are the `used=` of its
//     `loading cache slot` line (cached_source server_log), read with [ollama.CacheLog], the
//     reader lab run's ollama backend uses. The recorder lags behind the server, so lines are
//     consumed in request order, each row (and each cache fill) taking the first unconsumed line
//     whose `prompt=` is its prompt_eval_count; lines before it belong to requests the proxy
//     does not follow and are dropped.
//     Ollama's OpenAI- and Anthropic-compatible endpoints answer a constant 0 cached tokens: in
//     front of Ollama ([Options].UpstreamOllama, a server log, or the ollama rendering) their
//     rows never take it; the log gives their cached tokens too, else they are null, and so is
//     the re-read (reread_tokens is prompt − cached, null when cached is). Their Messages
//     input_tokens is Ollama's whole prompt: the prompt count, never an uncached count.
//  4. With [Options].Attribution (a local upstream: Ollama or llama-server, and the served
//     model's tokenizer), it asks the upstream for its own rendering of the request (a request
//     to Ollama's compatible endpoints converted first with Ollama's own conversion code,
//     [lab/backend/ollama.CompatibleChatRequest]) and feeds a
//     [cachesim.Attributor] that models the upstream's one cache slot (one model per upstream,
//     not per conversation: every client shares it): expected cached tokens, the first
//     divergence and its segment, re-read tokens by segment, reasoning tokens sent. Without it
//     (cloud APIs, which show no rendering) the row says expected_unknown, and its
//     divergence_segment names the first part of the request that differs from the
//     conversation's previous request ([cachesim.FirstDifference] over
//     [cachesim.DifferenceParts]: system, tools, message N, reasoning N, tool result N, note;
//     "" for the first request and for one that only appends); divergence_token stays null, as
//     no token count of the provider's rendering is known. The previous request is compared
//     without its reply: a cloud prompt cache holds earlier prompts, not what the model wrote.
//  5. It groups the request into a conversation (group.go: the longest shared message prefix
//     with an earlier request and its reply, among the conversations of the same session header
//     or prompt_cache_key, or of none; with a key the system prompt is left out of the
//     comparison, so a rebuilt system prompt stays in its session), which becomes the row's scenario ("conversation-0001"); the arm is the capture's
//     label ([Options].Label, default "capture"), repetition 1, request_index the order within
//     the conversation, turn the number of user messages and step the assistant messages since
//     the last one, plus one. What the grouping holds is bounded: at most 256 conversations,
//     none idle for 2,048 requests, each as message keys and digests (16 bytes a message,
//     40 a part), never texts; a dropped conversation keeps its name and counts, and the row of
//     a request that may continue it says so in its warnings ("this request may continue
//     conversation-0012, whose messages the proxy no longer holds ..."). The row is written at
//     once to the journal of the capture's samples file (metrics.CreateJournalPart, the results
//     layout of lab run), which Close turns into the Parquet file, so that no Parquet writer
//     holds a row group's metadata per 512 rows for as long as the capture runs, and a line
//     printed on the progress writer. The manifest is written at New and at Close only, never per row, so a
//     row's work does not grow with the capture: a row's columns say its conversation and how
//     it ended, and a capture killed before Close reads every row answered so far, its
//     conversations taken from the rows (metrics.Manifest.SessionsFromRows).
//
// The issue's done-when, "pointing a harness at the proxy during a scripted lab run gives the
// same columns, within the tokenizer's exactness, as the run's own records", is checked on the
// real local server (lab run --scenario midnight through lab proxy --render ollama against lab
// server start's Ollama v0.17.4: every row's prompt, cached, expected cached, divergence token
// and segment, re-read split, reasoning sent, completion, turn and step equal to the run's) and,
// without a server, by cmd/lab's TestProxyCapturesAnOllamaRunAsTheRunRecordsIt (a fake Ollama
// with a real prefix cache slot, Ollama's own renderer and the model's tokenizer).
//
// [Proxy.Close] writes the Parquet footer and the manifest with complete true and one session
// record per conversation, so `lab report` and `lab check --run` read a capture folder as they
// read a run folder.
package capture
