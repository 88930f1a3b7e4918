package gguf

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"lab/internal/tinytokenizer"
)

func TestFloat16Bits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{0.02, 0x251f},
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds up to infinity
		{1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{6.1035156e-05, 0x0400}, // smallest normal
		{5.9604645e-08, 0x0001}, // smallest subnormal
		{2e-8, 0x0000},
		{1.0009766, 0x3c01},
		{1.00048828125, 0x3c00}, // tie, rounds to even
	} {
		if got := float16Bits(tc.in); got != tc.want {
			t.Errorf("float16Bits(%g) = %#04x; want %#04x", tc.in, got, tc.want)
		}
	}
	if got := float16Bits(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("float16Bits(NaN) = %#04x; want a NaN", got)
	}
}

func TestWriteModelTiny(t *testing.T) {
	t.Parallel()
	tok := tinytokenizer.Write(t, true)
	dir := t.TempDir()
	o := ModelOptions{HiddenSize: 16, Layers: 3, FeedForward: 24, Heads: 4, KVHeads: 2, HeadDim: 8, ContextLength: 512, Seed: 7}

	a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
	for _, p := range []string{a, b} {
		if err := WriteModel(p, tok, o); err != nil {
			t.Fatalf("WriteModel: %v", err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two writes with the same options differ")
	}
	o2 := o
	o2.Seed = 8
	c := filepath.Join(dir, "c.gguf")
	if err := WriteModel(c, tok, o2); err != nil {
		t.Fatal(err)
	}
	if cb, _ := os.ReadFile(c); bytes.Equal(ab, cb) || len(cb) != len(ab) {
		t.Errorf("another seed: equal bytes %v, sizes %d vs %d; want different bytes, same size", bytes.Equal(ab, cb), len(cb), len(ab))
	}
	// String merges give the same file as pair merges.
	d := filepath.Join(dir, "d.gguf")
	if err := WriteModel(d, tinytokenizer.Write(t, false), o); err != nil {
		t.Fatal(err)
	}
	if db, _ := os.ReadFile(d); !bytes.Equal(ab, db) {
		t.Error(`merges as "a b" strings give another file than merges as pairs`)
	}

	g := tinytokenizer.DecodeGGUF(t, a)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":                   "qwen3",
		"general.file_type":                      uint32(0),
		"qwen3.block_count":                      uint32(3),
		"qwen3.embedding_length":                 uint32(16),
		"qwen3.feed_forward_length":              uint32(24),
		"qwen3.attention.head_count":             uint32(4),
		"qwen3.attention.head_count_kv":          uint32(2),
		"qwen3.attention.key_length":             uint32(8),
		"qwen3.attention.value_length":           uint32(8),
		"qwen3.context_length":                   uint32(512),
		"qwen3.rope.freq_base":                   float32(1e6),
		"qwen3.attention.layer_norm_rms_epsilon": float32(1e-6),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "qwen2",
		"tokenizer.ggml.eos_token_id":            uint32(10),
		"tokenizer.ggml.padding_token_id":        uint32(8),
		"tokenizer.ggml.bos_token_id":            uint32(8),
		"tokenizer.ggml.add_bos_token":           false,
		"tokenizer.chat_template":                "{{ messages }}",
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	if got, want := kv.Strings("tokenizer.ggml.tokens"), []string{"a", "b", "ab", "Ġ", "Ċ", "h", "i", "hi", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"}; !slices.Equal(got, want) {
		t.Errorf("tokens = %q; want %q", got, want)
	}
	if got, want := kv.Ints("tokenizer.ggml.token_type"), []int32{1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("token types = %v; want %v", got, want)
	}
	if got, want := kv.Strings("tokenizer.ggml.merges"), []string{"a b", "h i"}; !slices.Equal(got, want) {
		t.Errorf("merges = %q; want %q", got, want)
	}

	ts := g.Tensors().Items()
	if want := 2 + 11*3; len(ts) != want {
		t.Errorf("%d tensors; want %d", len(ts), want)
	}
	shapes := map[string][]uint64{}
	for _, tn := range ts {
		shapes[tn.Name] = tn.Shape
		if tn.Kind != uint32(ggml.TensorTypeF32) {
			t.Errorf("tensor %s kind %d; want F32", tn.Name, tn.Kind)
		}
	}
	for name, want := range map[string][]uint64{
		"token_embd.weight":        {16, 12},
		"output_norm.weight":       {16},
		"blk.0.attn_q.weight":      {16, 32},
		"blk.0.attn_k.weight":      {16, 16},
		"blk.1.attn_v.weight":      {16, 16},
		"blk.2.attn_output.weight": {32, 16},
		"blk.2.attn_q_norm.weight": {8},
		"blk.2.attn_k_norm.weight": {8},
		"blk.0.ffn_gate.weight":    {16, 24},
		"blk.0.ffn_up.weight":      {16, 24},
		"blk.0.ffn_down.weight":    {24, 16},
		"blk.0.ffn_norm.weight":    {16},
		"blk.0.attn_norm.weight":   {16},
		"blk.2.ffn_down.weight":    {24, 16},
		"blk.1.attn_output.weight": {32, 16},
		"blk.1.attn_k_norm.weight": {8},
		"blk.1.attn_q.weight":      {16, 32},
		"blk.1.ffn_gate.weight":    {16, 24},
		"blk.1.ffn_norm.weight":    {16},
		"blk.1.attn_norm.weight":   {16},
		"blk.1.attn_q_norm.weight": {8},
		"blk.2.attn_v.weight":      {16, 16},
		"blk.2.attn_k.weight":      {16, 16},
		"blk.2.ffn_up.weight":      {16, 24},
		"blk.2.ffn_gate.weight":    {16, 24},
		"blk.2.ffn_norm.weight":    {16},
		"blk.2.attn_norm.weight":   {16},
		"blk.2.attn_q.weight":      {16, 32},
		"blk.0.attn_v.weight":      {16, 16},
		"blk.0.attn_output.weight": {32, 16},
		"blk.0.attn_q_norm.weight": {8},
		"blk.0.attn_k_norm.weight": {8},
		"blk.1.ffn_up.weight":      {16, 24},
		"blk.1.ffn_down.weight":    {24, 16},
		"blk.1.attn_k.weight":      {16, 16},
	} {
		if got, ok := shapes[name]; !ok || !slices.Equal(got, want) {
			t.Errorf("tensor %s shape %v (present %v); want %v", name, got, ok, want)
		}
	}

	// F16 stores matrices as float16 and keeps norms float32.
	h := filepath.Join(dir, "h.gguf")
	o.F16 = true
	if err := WriteModel(h, tok, o); err != nil {
		t.Fatal(err)
	}
	gh := tinytokenizer.DecodeGGUF(t, h)
	if ft := gh.KV()["general.file_type"]; ft != uint32(1) {
		t.Errorf("f16 file_type = %v; want 1", ft)
	}
	for _, tn := range gh.Tensors().Items() {
		want := ggml.TensorTypeF16
		if len(tn.Shape) == 1 {
			want = ggml.TensorTypeF32
		}
		if tn.Kind != uint32(want) {
			t.Errorf("f16 model: tensor %s kind %d; want %d", tn.Name, tn.Kind, want)
		}
	}
}

func TestWriteModelRejects(t *testing.T) {
	t.Parallel()
	tok := tinytokenizer.Write(t, true)
	p := filepath.Join(t.TempDir(), "x.gguf")
	if err := WriteModel(p, tok, ModelOptions{Heads: 3, KVHeads: 2}); err == nil {
		t.Error("WriteModel(KVHeads not dividing Heads) = nil error")
	}
	if err := WriteModel(p, t.TempDir(), DefaultModelOptions()); err == nil {
		t.Error("WriteModel(no tokenizer files) = nil error")
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("a failed WriteModel left a file")
	}
}

// An added token whose id is far past the tokens given is an error naming tokenizer.json and
// the id, not a vocabulary allocated to that size (a makeslice panic, or gigabytes).
func TestReadVocabAddedTokenIDOutOfRange(t *testing.T) {
	for _, id := range []string{"4000000000000000", "2", "-1"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":`+id+`,"content":"<x>","special":true}]}`), 0o644)
		os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{}`), 0o644)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("added token id %s: ReadVocab panicked: %v; want an error naming tokenizer.json", id, r)
				}
			}()
			_, err := ReadVocab(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) || !strings.Contains(err.Error(), id) {
				t.Errorf("added token id %s: err %v; want one naming %s and the id", id, err, filepath.Join(dir, "tokenizer.json"))
			}
		}()
	}
}

// A tokenizer.json that is not JSON is an error naming the file's path and the line of the
// offending byte (a raw line feed in a string ends its own line); a value of the wrong type
// names its field.
func TestReadVocabMalformedTokenizerJSON(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"{\n  \"model\": {\n    \"type\": \"BPE\",\n    \"vocab\": {\"a\": 0,}\n  }\n}\n", ":4: invalid character '}' looking for beginning of object key string"},
		{"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\", \"b\n\"]]}}", ":1: invalid character '\\n' in string literal"},
		{"{\n\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}}}", "model.vocab"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "tokenizer.json")
		os.WriteFile(path, []byte(tc.body), 0o644)
		os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{}`), 0o644)
		_, err := ReadVocab(dir)
		if err == nil {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v; want one naming %s and %q", tc.body, err, path, tc.want)
		}
	}
}
