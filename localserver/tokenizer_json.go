package localserver

import (
	"fmt"

	"github.com/ollama/ollama/tokenizer"
)

// LoadTokenizerJSON builds the same [Tokenizer] as [LoadTokenizer] on the synthetic model's GGUF,
// straight from the tokenizer.json and tokenizer_config.json in dir (the folder [FetchTokenizer]
// returns, which [WriteModel] reads): the same vocabulary, token types, merges and
// end-of-sequence token, no beginning- or end-of-sequence token added, and the qwen3
// pre-tokenizer. It needs no GGUF and no Ollama build.
func LoadTokenizerJSON(dir string) (*Tokenizer, error) {
	v, err := readVocab(dir)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
	}
	// As modelContents writes the GGUF: add_bos_token and add_eos_token false, the padding token
	// as bos_token_id, eos_token_id from tokenizer_config.json.
	voc := &tokenizer.Vocabulary{
		Values: v.tokens,
		Types:  v.types,
		Merges: v.merges,
		AddBOS: false,
		BOS:    []int32{int32(v.pad)},
		AddEOS: false,
		EOS:    []int32{int32(v.eos)},
	}
	return newTokenizer(voc), nil
}
