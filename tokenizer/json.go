package tokenizer

import (
	"fmt"

	ollamatok "github.com/ollama/ollama/tokenizer"

	"lab/gguf"
)

// LoadJSON builds the same [Tokenizer] as [Load] on the synthetic model's GGUF, straight from the
// tokenizer.json and tokenizer_config.json in dir (the folder the lab's tokenizer fetch returns,
// which [gguf.WriteModel] reads with [gguf.ReadVocab]): the same vocabulary, token types, merges
// and end-of-sequence token, no beginning- or end-of-sequence token added, and the qwen3
// pre-tokenizer. It needs no GGUF and no Ollama build. Its errors are [gguf.ReadVocab]'s, with
// the folder.
func LoadJSON(dir string) (*Tokenizer, error) {
	v, err := gguf.ReadVocab(dir)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
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
