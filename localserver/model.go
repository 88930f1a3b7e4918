package localserver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

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

// withDefaults fills the zero fields of o from DefaultModelOptions.
func (o ModelOptions) withDefaults() ModelOptions {
	d := DefaultModelOptions()
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
	return nil
}

// key is a short hash of everything that determines the model file's bytes.
func (o ModelOptions) key() string {
	o = o.withDefaults()
	b, _ := json.Marshal(struct {
		Format    int
		Tokenizer string
		Options   ModelOptions
	}{modelFormat, TokenizerPackage, o})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// modelFormat versions how WriteModel lays out a file; change it when the bytes change.
const modelFormat = 1

// Qwen3 model constants, as in Qwen3's config.json.
const (
	qwen3RopeBase   = 1e6
	qwen3RMSEpsilon = 1e-6
	// weightStd is the standard deviation of the random weight matrices.
	weightStd = 0.02
)

// Token types of a GGUF vocabulary (tokenizer.ggml.token_type), as llama.cpp numbers them.
const (
	tokenTypeNormal      = 1
	tokenTypeControl     = 3
	tokenTypeUserDefined = 4
)

// vocab is a tokenizer.json read into GGUF's tokenizer.ggml.* shape.
type vocab struct {
	tokens   []string
	types    []int32
	merges   []string
	template string
	eos, pad uint32
}

// readVocab reads tokenizer.json and tokenizer_config.json from dir: the BPE vocabulary plus the
// added tokens (control tokens for "special", user-defined otherwise), merges as "a b" strings,
// the chat template, and the ids of the end-of-sequence and padding tokens.
func readVocab(dir string) (*vocab, error) {
	var tj struct {
		Model struct {
			Type   string            `json:"type"`
			Vocab  map[string]int    `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
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
	n := len(tj.Model.Vocab)
	for _, t := range tj.AddedTokens {
		n = max(n, t.ID+1)
	}
	v := &vocab{tokens: make([]string, n), types: make([]int32, n)}
	for s, id := range tj.Model.Vocab {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("read tokenizer.json: token id %d out of range", id)
		}
		v.tokens[id], v.types[id] = s, tokenTypeNormal
	}
	for _, t := range tj.AddedTokens {
		if t.ID < 0 {
			return nil, fmt.Errorf("read tokenizer.json: added token id %d out of range", t.ID)
		}
		v.tokens[t.ID], v.types[t.ID] = t.Content, tokenTypeUserDefined
		if t.Special {
			v.types[t.ID] = tokenTypeControl
		}
	}
	for id, typ := range v.types {
		if typ == 0 {
			return nil, fmt.Errorf("read tokenizer.json: no token has id %d", id)
		}
	}
	v.merges = make([]string, len(tj.Model.Merges))
	for i, raw := range tj.Model.Merges {
		var pair []string
		if err := json.Unmarshal(raw, &pair); err == nil && len(pair) == 2 {
			v.merges[i] = pair[0] + " " + pair[1]
		} else if err := json.Unmarshal(raw, &v.merges[i]); err != nil {
			return nil, fmt.Errorf("read tokenizer.json: merge %d is neither [a, b] nor \"a b\"", i)
		}
	}

	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
	}
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), &cfg); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(cfg.ChatTemplate, &v.template) // a list of named templates is left out
	eos, err := v.idOf(tokenContent(cfg.EOS, "<|im_end|>"))
	if err != nil {
		return nil, err
	}
	pad, err := v.idOf(tokenContent(cfg.Pad, "<|endoftext|>"))
	if err != nil {
		return nil, err
	}
	v.eos, v.pad = eos, pad
	return v, nil
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
func (v *vocab) idOf(s string) (uint32, error) {
	for id, t := range v.tokens {
		if t == s {
			return uint32(id), nil
		}
	}
	return 0, fmt.Errorf("read tokenizer: no token %q", s)
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return nil
}

// WriteModel writes to path a GGUF file of architecture qwen3 with o's dimensions, random
// weights drawn from o.Seed (normal, standard deviation 0.02; norms 1.0; the output projection
// tied to token_embd) and the real Qwen3 tokenizer read from tokenizerDir's tokenizer.json and
// tokenizer_config.json (see [FetchTokenizer]): 151,669 tokens, their merges and types, the chat
// template as tokenizer.chat_template, <|im_end|> as end of sequence, <|endoftext|> as
// padding, no beginning-of-sequence token added. The same options and tokenizer give a
// byte-identical file. The embedding table dominates its size: 45 MB at the defaults (hidden 64,
// float32), 25 MB with F16. The file is written under a temporary name in path's folder, which
// must exist, and renamed into place.
func WriteModel(path, tokenizerDir string, o ModelOptions) (err error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	v, err := readVocab(tokenizerDir)
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
func modelContents(v *vocab, o ModelOptions) (ggml.KV, []*ggml.Tensor) {
	fileType := uint32(0) // all float32
	if o.F16 {
		fileType = 1 // mostly float16
	}
	kv := ggml.KV{
		"general.architecture":                   "qwen3",
		"general.name":                           "lab synthetic qwen3",
		"general.file_type":                      fileType,
		"qwen3.block_count":                      uint32(o.Layers),
		"qwen3.context_length":                   uint32(o.ContextLength),
		"qwen3.embedding_length":                 uint32(o.HiddenSize),
		"qwen3.feed_forward_length":              uint32(o.FeedForward),
		"qwen3.attention.head_count":             uint32(o.Heads),
		"qwen3.attention.head_count_kv":          uint32(o.KVHeads),
		"qwen3.attention.key_length":             uint32(o.HeadDim),
		"qwen3.attention.value_length":           uint32(o.HeadDim),
		"qwen3.rope.freq_base":                   float32(qwen3RopeBase),
		"qwen3.attention.layer_norm_rms_epsilon": float32(qwen3RMSEpsilon),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "qwen2",
		"tokenizer.ggml.tokens":                  v.tokens,
		"tokenizer.ggml.token_type":              v.types,
		"tokenizer.ggml.merges":                  v.merges,
		"tokenizer.ggml.eos_token_id":            v.eos,
		"tokenizer.ggml.padding_token_id":        v.pad,
		"tokenizer.ggml.bos_token_id":            v.pad,
		"tokenizer.ggml.add_bos_token":           false,
		"tokenizer.ggml.add_eos_token":           false,
	}
	if v.template != "" {
		kv["tokenizer.chat_template"] = v.template
	}

	h, q, k, ff := uint64(o.HiddenSize), uint64(o.Heads*o.HeadDim), uint64(o.KVHeads*o.HeadDim), uint64(o.FeedForward)
	hd, nv := uint64(o.HeadDim), uint64(len(v.tokens))
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
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			norm(p+"attn_norm.weight", h),
			matrix(p+"attn_q.weight", h, q),
			norm(p+"attn_q_norm.weight", hd),
			matrix(p+"attn_k.weight", h, k),
			norm(p+"attn_k_norm.weight", hd),
			matrix(p+"attn_v.weight", h, k),
			matrix(p+"attn_output.weight", q, h),
			norm(p+"ffn_norm.weight", h),
			matrix(p+"ffn_gate.weight", h, ff),
			matrix(p+"ffn_up.weight", h, ff),
			matrix(p+"ffn_down.weight", ff, h),
		)
	}
	return kv, ts
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
