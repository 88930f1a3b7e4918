// Package tokenizer counts tokens exactly as a served model does, for each of the lab's model
// families (lab/gguf.Family): [Load] builds a [Tokenizer] from a GGUF file's tokenizer.ggml.*
// keys (a synthetic model's, or any GGUF of those families), [LoadFamilyJSON] (and [LoadJSON]
// for Qwen3) the same one from the tokenizer.json and tokenizer_config.json the synthetic model
// is written from.
//
// Qwen3 is counted with Ollama's byte-pair encoder (github.com/ollama/ollama/tokenizer, v0.17.4)
// and the qwen3 pre-tokenizer, so a count is the count Ollama's prefill sees (llama-server's
// differs on a few texts, such as a code fence before a blank line: 0.05 to 0.1 % of the lab's
// markdown files, measured);
// [LoadFamilyJSONLlama] counts it as llama-server does instead, for the sim of llama-server.
//
// The other families — DeepSeek V3, Gemma 3, Llama 3.1, gpt-oss — are counted as llama.cpp's
// tokenizer (src/llama-vocab.cpp and src/unicode.cpp, llama-server b11669) counts them: a
// byte-level BPE with the family's pre-tokenizer (DeepSeek V3's three expressions, Llama 3's,
// gpt-4o's), ignore_merges where llama.cpp sets it (Llama 3), or a SentencePiece vocabulary
// merged by score with byte fallback (Gemma 3); llama-server's /tokenize gives the same ids on
// the lab's sample texts and files. Ollama counts some of them otherwise (its DeepSeek V3 and
// Gemma 3 tokenizers have bugs of their own: see the family findings), so for those families a
// count of [Load] is llama-server's, not Ollama's. [LoadOllama] counts as Ollama v0.17.4's runner
// for the file does: Gemma 3 with Ollama's own SentencePiece (its engine's), a file on an
// architecture of the llama.cpp runner (a llama stand-in) as llama.cpp does.
package tokenizer

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/dlclark/regexp2"
	"github.com/ollama/ollama/fs/ggml"
	ollamatok "github.com/ollama/ollama/tokenizer"
)

// qwen3Pretokenizer is the pre-tokenizer pattern github.com/ollama/ollama/model/models/qwen3
// passes to ollamatok.NewBytePairEncoding (v0.17.4); it equals tokenizer.json's Split regex.
const qwen3Pretokenizer = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// memoLimit bounds the text held by a Tokenizer's memo (bytes of keys); past it the memo is
// emptied and refilled.
const memoLimit = 64 << 20

// Tokenizer counts tokens exactly as a served model does: a Qwen3 model as Ollama does (built
// from the GGUF file's own tokenizer.ggml.* keys with Ollama's tokenizer package and the qwen3
// pre-tokenizer; special tokens cut out in id order, as Ollama does), any other family as
// llama-server does (llama.cpp's tokenizer over the same keys; special tokens — control,
// user-defined and unknown — cut out longest first). It adds a beginning/end-of-sequence token
// only where the file says to (tokenizer.ggml.add_bos_token: the synthetic Qwen3 and gpt-oss
// models add none, DeepSeek V3, Gemma 3 and Llama 3.1 add BOS, as llama-server does to a
// prompt rendered by their chat templates).
//
// Encode memoises: text is split at special tokens (where the pre-tokenizer splits anyway) and
// each piece between them is tokenized once, so a long conversation costs only its new messages.
// A Tokenizer is safe for concurrent use.
type Tokenizer struct {
	bpe ollamatok.BytePairEncoding
	// lv, when not nil, tokenizes instead of bpe, as llama.cpp does (every family but Qwen3).
	lv *llamaVocab
	// spm, when not nil, tokenizes instead of bpe: Ollama's own SentencePiece, as Ollama's
	// engine runs a Gemma 3 model ([LoadOllama]).
	spm      *ollamatok.SentencePiece
	specials []string // control and user-defined tokens, in id order (for lv: see newLlamaTokenizer)
	// scanSafe caches scanOK's answer, computed once.
	scanOnce sync.Once
	scanSafe bool
	ids      []int32 // ids[i] is the id of specials[i]
	addBOS   bool
	addEOS   bool
	bos, eos int32

	mu        sync.Mutex
	memo      map[string][]int32
	memoBytes int
	// hugeText and hugeIDs are the last text longer than hugePiece tokenized, and its ids.
	hugeText string
	hugeIDs  []int32
}

// Load reads the tokenizer of the GGUF file at ggufPath (from [gguf.WriteModel] or any GGUF of
// the same families). A Qwen3 file (architecture qwen3 or qwen3moe, tokenizer.ggml.model gpt2,
// pre qwen2) gets Ollama's byte-pair encoder with the qwen3 pre-tokenizer, as before families
// existed; any other file llama.cpp's tokenizer as llama-server runs it (see [Tokenizer]): a
// byte-level BPE (model gpt2) with pre deepseek-v3, llama-bpe (llama3, llama-v3) or gpt-4o
// (llama4), or a SentencePiece vocabulary with scores (model llama: Gemma 3's). It fails,
// naming the file, when the file is not a GGUF, holds Qwen's pre-tokenizer on another
// architecture than qwen3 or another pre-tokenizer on the qwen3 architecture (Ollama's qwen3
// engine would split it with Qwen's regex: another family's vocabulary, see [gguf.Family]),
// names a model or pre-tokenizer the lab does not reproduce, or has no vocabulary.
func Load(ggufPath string) (*Tokenizer, error) {
	kv, err := readKV(ggufPath)
	if err != nil {
		return nil, err
	}
	m, pre := kv.String("tokenizer.ggml.model"), kv.String("tokenizer.ggml.pre")
	qwenArch := kv.Architecture() == "qwen3" || kv.Architecture() == "qwen3moe"
	qwenVocab := m == "gpt2" && (pre == "" || pre == "qwen2")
	switch {
	case qwenVocab && !qwenArch:
		return nil, fmt.Errorf("load tokenizer from %s: architecture %q, want qwen3 for Qwen3's tokenizer (gpt2, qwen2)", ggufPath, kv.Architecture())
	case qwenArch && !qwenVocab:
		return nil, fmt.Errorf("load tokenizer from %s: tokenizer.ggml.model %q, pre %q on the qwen3 architecture: not Qwen3's (gpt2, qwen2)", ggufPath, m, pre)
	}
	tokens, types := kv.Strings("tokenizer.ggml.tokens"), kv.Ints("tokenizer.ggml.token_type")
	if len(tokens) == 0 || len(types) != len(tokens) {
		return nil, fmt.Errorf("load tokenizer from %s: %d tokens with %d types", ggufPath, len(tokens), len(types))
	}
	if !qwenVocab {
		var scores []float32
		if m == "llama" {
			if scores = kv.Floats("tokenizer.ggml.scores"); len(scores) != len(tokens) {
				return nil, fmt.Errorf("load tokenizer from %s: %d tokens with %d scores", ggufPath, len(tokens), len(scores))
			}
		}
		t, err := newLlamaTokenizer(llamaSpec{
			model: m, pre: pre, tokens: tokens, types: types, merges: kv.Strings("tokenizer.ggml.merges"), scores: scores,
			addBOS: kv.Bool("tokenizer.ggml.add_bos_token", true), addEOS: kv.Bool("tokenizer.ggml.add_eos_token", false),
			bos: int32(kv.Uint("tokenizer.ggml.bos_token_id")), eos: int32(kv.Uint("tokenizer.ggml.eos_token_id")),
		})
		if err != nil {
			return nil, fmt.Errorf("load tokenizer from %s: %w", ggufPath, err)
		}
		return t, nil
	}
	v := &ollamatok.Vocabulary{
		Values: tokens,
		Types:  types,
		Merges: kv.Strings("tokenizer.ggml.merges"),
		AddBOS: kv.Bool("tokenizer.ggml.add_bos_token", true),
		BOS:    []int32{int32(kv.Uint("tokenizer.ggml.bos_token_id"))},
		AddEOS: kv.Bool("tokenizer.ggml.add_eos_token", false),
		EOS: append(
			[]int32{int32(kv.Uint("tokenizer.ggml.eos_token_id"))},
			kv.Ints("tokenizer.ggml.eos_token_ids")...,
		),
	}
	return newTokenizer(v), nil
}

// LoadOllama reads the tokenizer of the GGUF file at ggufPath as Ollama v0.17.4 tokenizes a
// prompt for it, which depends on the runner the file's architecture is served in:
//
//   - an architecture Ollama's own engine requires (fs/ggml KV.OllamaEngineRequired): that
//     engine's Go tokenizer, which the lab runs in process — Qwen3's ([Load]: Ollama's byte-pair
//     encoder with the qwen3 pre-tokenizer), or, for Gemma 3 (architecture gemma3,
//     tokenizer.ggml.model llama), Ollama's SentencePiece built as model/models/gemma3 builds
//     it (special tokens cut out in id order, so "\n" before "\n\n": whitespace runs count
//     otherwise than in llama.cpp);
//   - any other architecture (llama: the llama.cpp runner, as the lab leaves OLLAMA_NEW_ENGINE
//     unset): llama.cpp's tokenizer, [Load].
//
// Other files of Ollama's engine are an error naming the file and the architecture: the lab
// does not reproduce Ollama's deepseek2 tokenizer (its byte-pair encoder repeats text with
// DeepSeek V3's three expressions) nor its gpt-oss one.
func LoadOllama(ggufPath string) (*Tokenizer, error) {
	kv, err := readKV(ggufPath)
	if err != nil {
		return nil, err
	}
	arch := kv.Architecture()
	switch {
	case !kv.OllamaEngineRequired(), arch == "qwen3", arch == "qwen3moe":
		return Load(ggufPath)
	case arch != "gemma3" || kv.String("tokenizer.ggml.model") != "llama":
		return nil, fmt.Errorf("load tokenizer from %s: architecture %q, tokenizer.ggml.model %q runs in Ollama's own engine, whose tokenizer for it the lab does not reproduce (qwen3 and gemma3 only)", ggufPath, arch, kv.String("tokenizer.ggml.model"))
	}
	// As github.com/ollama/ollama/model/models/gemma3 New builds it (v0.17.4).
	v := &ollamatok.Vocabulary{
		Values: kv.Strings("tokenizer.ggml.tokens"),
		Scores: kv.Floats("tokenizer.ggml.scores"),
		Types:  kv.Ints("tokenizer.ggml.token_type"),
		Merges: kv.Strings("tokenizer.ggml.merges"),
		AddBOS: kv.Bool("tokenizer.ggml.add_bos_token", true),
		BOS:    []int32{int32(kv.Uint("tokenizer.ggml.bos_token_id"))},
		AddEOS: kv.Bool("tokenizer.ggml.add_eos_token", false),
		EOS:    append([]int32{int32(kv.Uint("tokenizer.ggml.eos_token_id"))}, kv.Ints("tokenizer.ggml.eos_token_ids")...),
	}
	if n := len(v.Values); n == 0 || len(v.Types) != n || len(v.Scores) != n {
		return nil, fmt.Errorf("load tokenizer from %s: %d tokens with %d types and %d scores", ggufPath, n, len(v.Types), len(v.Scores))
	}
	v.EOS = append(v.EOS, int32(kv.Uint("tokenizer.ggml.eot_token_id", 106)))
	spm := ollamatok.NewSentencePiece(v)
	t := &Tokenizer{spm: &spm, addBOS: v.AddBOS, addEOS: v.AddEOS, bos: v.BOS[0], eos: v.EOS[0], memo: map[string][]int32{}}
	for i, typ := range v.Types {
		if typ == ollamatok.TOKEN_TYPE_CONTROL || typ == ollamatok.TOKEN_TYPE_USER_DEFINED {
			t.specials = append(t.specials, v.Values[i])
			t.ids = append(t.ids, int32(i))
		}
	}
	return t, nil
}

// llamaSpec is what a tokenizer run as llama.cpp's is built from: a GGUF file's
// tokenizer.ggml.* keys.
type llamaSpec struct {
	model, pre     string
	tokens         []string
	types          []int32
	merges         []string
	scores         []float32
	addBOS, addEOS bool
	bos, eos       int32
}

// newLlamaTokenizer builds a tokenizer that counts as llama.cpp's: its special tokens (control,
// user-defined and unknown) are cut out longest first, as llama_vocab's
// tokenizer_st_partition does, and the text between them is tokenized by a [llamaVocab].
func newLlamaTokenizer(s llamaSpec) (*Tokenizer, error) {
	if n := int32(len(s.tokens)); s.bos < 0 || s.bos >= n || s.eos < 0 || s.eos >= n {
		return nil, fmt.Errorf("bos_token_id %d or eos_token_id %d out of range (%d tokens)", s.bos, s.eos, n)
	}
	t := &Tokenizer{addBOS: s.addBOS, addEOS: s.addEOS, bos: s.bos, eos: s.eos, memo: map[string][]int32{}}
	switch s.model {
	case "gpt2":
		pt, err := newPreTokenizer(s.pre)
		if err != nil {
			return nil, err
		}
		if len(s.merges) == 0 {
			return nil, fmt.Errorf("a byte-level BPE vocabulary with no merges")
		}
		t.lv = newLlamaVocab(s.tokens, s.types, s.merges, nil)
		t.lv.pre = pt
		if a, ok := preAliases[s.pre]; ok {
			s.pre = a
		}
		t.lv.ignoreMerges = ignoreMergesPre[s.pre]
	case "llama":
		t.lv = newLlamaVocab(s.tokens, s.types, nil, s.scores)
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not one the lab reproduces (gpt2, llama)", s.model)
	}
	for i, typ := range s.types {
		if typ == tokenTypeControl || typ == tokenTypeUserDefined || typ == tokenTypeUnknown {
			t.specials = append(t.specials, s.tokens[i])
			t.ids = append(t.ids, int32(i))
		}
	}
	// Longest first; of two as long, the lower id first (llama.cpp's std::sort leaves their order
	// unspecified: two of one length cut apart only where they overlap).
	order := make([]int, len(t.specials))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(t.specials[b]) - len(t.specials[a]) })
	specials, ids := make([]string, len(order)), make([]int32, len(order))
	for i, j := range order {
		specials[i], ids[i] = t.specials[j], t.ids[j]
	}
	t.specials, t.ids = specials, ids
	return t, nil
}

// newTokenizer builds the memoising tokenizer over a vocabulary with the qwen3 pre-tokenizer;
// control and user-defined tokens are the special tokens text is split at.
func newTokenizer(v *ollamatok.Vocabulary) *Tokenizer {
	t := &Tokenizer{
		bpe:    ollamatok.NewBytePairEncoding(v, qwen3Pretokenizer),
		addBOS: v.AddBOS,
		addEOS: v.AddEOS,
		bos:    v.BOS[0],
		eos:    v.EOS[0],
		memo:   map[string][]int32{},
	}
	for i, typ := range v.Types {
		if typ == ollamatok.TOKEN_TYPE_CONTROL || typ == ollamatok.TOKEN_TYPE_USER_DEFINED {
			t.specials = append(t.specials, v.Values[i])
			t.ids = append(t.ids, int32(i))
		}
	}
	return t
}

// piece is a part of a text between special tokens, or one special token (id >= 0).
type piece struct {
	text string
	id   int32
}

// split cuts text at every occurrence of a special token, taking the special tokens one after
// another in id order as ollamatok.BytePairEncoding.Encode does, so that both see the same
// pieces.
func (t *Tokenizer) split(text string) []piece {
	if t.scanOK() {
		return t.scan(text)
	}
	return t.splitInOrder(text)
}

// scanOK reports whether the one-pass scan finds the same pieces as splitting in id order: when
// every special token starts with '<' and none holds another (true of Qwen3's 26).
func (t *Tokenizer) scanOK() bool {
	if t.lv != nil || t.spm != nil {
		return false // llama.cpp's order (longest first) or Ollama's SentencePiece's: splitInOrder
	}
	t.scanOnce.Do(func() {
		t.scanSafe = true
		for i, a := range t.specials {
			if !strings.HasPrefix(a, "<") {
				t.scanSafe = false
			}
			for j, b := range t.specials {
				if i != j && strings.Contains(a, b) {
					t.scanSafe = false
				}
			}
		}
	})
	return t.scanSafe
}

// scan cuts text at special tokens in one pass, looking only at '<' bytes.
func (t *Tokenizer) scan(text string) []piece {
	var ps []piece
	start, i := 0, 0
	for {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			break
		}
		i += j
		matched := false
		for k, sp := range t.specials {
			if strings.HasPrefix(text[i:], sp) {
				if i > start {
					ps = append(ps, piece{text: text[start:i], id: -1})
				}
				ps = append(ps, piece{text: sp, id: t.ids[k]})
				i += len(sp)
				start, matched = i, true
				break
			}
		}
		if !matched {
			i++
		}
	}
	if start < len(text) || len(ps) == 0 {
		ps = append(ps, piece{text: text[start:], id: -1})
	}
	return ps
}

// splitInOrder cuts text at every occurrence of a special token, taking the special tokens one
// after another in id order as ollamatok.BytePairEncoding.Encode does.
func (t *Tokenizer) splitInOrder(text string) []piece {
	ps := []piece{{text: text, id: -1}}
	for i, sp := range t.specials {
		if !strings.Contains(text, sp) {
			continue
		}
		var next []piece
		for _, p := range ps {
			if p.id >= 0 {
				next = append(next, p)
				continue
			}
			s := p.text
			for {
				j := strings.Index(s, sp)
				if j < 0 {
					break
				}
				if j > 0 {
					next = append(next, piece{text: s[:j], id: -1})
				}
				next = append(next, piece{text: sp, id: t.ids[i]})
				s = s[j+len(sp):]
			}
			if s != "" {
				next = append(next, piece{text: s, id: -1})
			}
		}
		ps = next
	}
	return ps
}

// Bare returns a tokenizer over the same vocabulary that adds no beginning- or end-of-sequence
// token of its own: llama-server's /tokenize with add_special false, for a prompt whose start
// token is written in its text (the llamacpp backend's rendered prompt: BOS, then the chat
// template's rendering). For a tokenizer that adds none it counts as t does. It has a memo of its
// own and is safe for concurrent use.
func (t *Tokenizer) Bare() *Tokenizer {
	return &Tokenizer{bpe: t.bpe, lv: t.lv, specials: t.specials, ids: t.ids, bos: t.bos, eos: t.eos, memo: map[string][]int32{}}
}

// Encode returns the token ids of text as the server's tokenizer produces them for a prompt:
// special tokens written in the text (such as <|im_start|>) become their ids. The result may be
// shared with the memo (a text that is one piece between special tokens): callers must not
// change it.
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	ps := t.split(text)
	if len(ps) == 1 && ps[0].id < 0 && !t.addBOS && !t.addEOS {
		// One piece: its memoised ids as they are, not a copy (a tool argument of megabytes is
		// millions of tokens), their capacity clipped so that an append cannot write into them.
		ids, err := t.encodePiece(ps[0].text)
		return slices.Clip(ids), err
	}
	var ids []int32
	if t.addBOS {
		ids = append(ids, t.bos)
	}
	for _, p := range ps {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		got, err := t.encodePiece(p.text)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	if t.addEOS {
		ids = append(ids, t.eos)
	}
	return ids, nil
}

// encodePiece tokenizes text that holds no special token, once per distinct text. A text longer
// than hugePiece is remembered in a slot of its own that holds only the last such text. A Qwen3
// text missing from the memo is tokenized in lines (encodeLines), each remembered too.
func (t *Tokenizer) encodePiece(text string) ([]int32, error) {
	huge := len(text) > hugePiece
	t.mu.Lock()
	ids, ok := t.memo[text]
	if huge {
		ids, ok = t.hugeIDs, t.hugeIDs != nil && t.hugeText == text
		if !ok {
			// Forgotten before the new one is tokenized, so the two are never held at once.
			t.hugeText, t.hugeIDs = "", nil
		}
	}
	t.mu.Unlock()
	if ok {
		return ids, nil
	}
	var err error
	if huge || t.lv != nil || t.spm != nil {
		ids, err = t.encodeChunks(text, chunkBytes)
	} else {
		ids, err = t.encodeLines(text)
	}
	if err != nil {
		return nil, fmt.Errorf("encode text: %w", err)
	}
	t.mu.Lock()
	if huge {
		t.hugeText, t.hugeIDs = text, ids
	} else {
		t.remember(text, ids)
	}
	t.mu.Unlock()
	return ids, nil
}

// remember adds text's ids to the memo, emptying it first when it would pass memoLimit. t.mu
// is held.
func (t *Tokenizer) remember(text string, ids []int32) {
	if t.memoBytes+len(text) > memoLimit {
		clear(t.memo)
		t.memoBytes = 0
	}
	if _, ok := t.memo[text]; !ok {
		t.memo[text] = ids
		t.memoBytes += len(text)
	}
}

// encodeLines tokenizes text, which holds no special token and at most hugePiece bytes, with
// Ollama's byte-pair encoder line by line, each line looked up in the memo and remembered
// there: a line ends before a line feed's successor that is a printable non-space character
// (0x21–0x7E), the first of the places safeCut allows, so the same line is the same memo entry
// wherever it appears. A text that differs from one tokenized before only in some lines (the
// prompt up to a segment's end inside a turn, a result cut short, a file read again after an
// edit, a tool result quoted in another turn) costs those lines. The ids are those of one call
// on the whole text (see safeCut).
func (t *Tokenizer) encodeLines(text string) ([]int32, error) {
	var ids []int32
	for len(text) > 0 {
		end := lineEnd(text)
		line := text[:end]
		t.mu.Lock()
		got, ok := t.memo[line]
		t.mu.Unlock()
		if !ok {
			var err error
			if got, err = t.encodeWords(line); err != nil {
				return nil, err
			}
			t.mu.Lock()
			t.remember(line, got)
			t.mu.Unlock()
		}
		ids = append(ids, got...)
		text = text[end:]
	}
	return ids, nil
}

// qwen3Words is the qwen3 pre-tokenizer compiled as ollamatok.NewBytePairEncoding compiles it
// (regexp2, RE2 syntax), for encodeWords. regexp2's Regexp is safe for concurrent use.
var qwen3Words = sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(qwen3Pretokenizer, regexp2.RE2) })

// encodeWords tokenizes line, which holds no special token, with t.bpe (Qwen3's byte-pair
// encoder) word by word, each word looked up in the memo and remembered there: the words are
// the pre-tokenizer's splits as ollamatok.BytePairEncoding.split cuts them (every match of the
// expression over the line's code points and, as there, the text before a match that does not
// start where the previous one ended, from the line's start), and ollamatok's Encode byte-pair
// encodes each split on its own, so the ids are those of t.bpe.Encode(line). A word's byte-pair
// merges, most of a new line's cost, are then done once per distinct word of the whole run.
// t.bpe.Encode of one word splits it again into that one word: a match is the whole of its
// text, and the one lookahead of the expression, \s+(?!\S), holds at the text's end.
func (t *Tokenizer) encodeWords(line string) ([]int32, error) {
	r := []rune(line)
	var ids []int32
	word := func(w string) error {
		t.mu.Lock()
		got, ok := t.memo[w]
		t.mu.Unlock()
		if !ok {
			var err error
			if got, err = t.bpe.Encode(w, false); err != nil {
				return err
			}
			t.mu.Lock()
			t.remember(w, got)
			t.mu.Unlock()
		}
		ids = append(ids, got...)
		return nil
	}
	offset := 0
	m, err := qwen3Words().FindRunesMatch(r)
	for ; err == nil && m != nil; m, err = qwen3Words().FindNextMatch(m) {
		if offset != m.Index {
			if err := word(string(r[:m.Index])); err != nil {
				return nil, err
			}
		}
		if err := word(m.String()); err != nil {
			return nil, err
		}
		offset = m.Index + m.Length
	}
	if err != nil {
		return nil, fmt.Errorf("pre-tokenize: %w", err)
	}
	if offset < len(r) {
		if err := word(string(r[offset:])); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// lineEnd returns the end of text's first line for encodeLines: the first offset e > 0 right
// after a line feed followed by a printable non-space ASCII character, or len(text).
func lineEnd(text string) int {
	from := 0
	for {
		j := strings.IndexByte(text[from:], '\n')
		if j < 0 {
			return len(text)
		}
		e := from + j + 1 // after the line feed
		if e >= len(text) {
			return len(text)
		}
		if c := text[e]; c >= 0x21 && c <= 0x7e {
			return e
		}
		from = e
	}
}

// hugePiece is the length in bytes past which a text between special tokens is remembered only
// until the next such text: a turn holding a tool argument of megabytes is asked for a few times
// in a row (the sim's prompt, the harness's attribution of it), and its ids, millions of them,
// and the prompt its text is part of would otherwise stay in the memo for many requests after.
const hugePiece = 1 << 20

// chunkBytes is the length of the chunks encodePiece hands Ollama's tokenizer: a longer text is
// cut, at the first safe cut past each chunkBytes, into chunks tokenized one after another.
// Ollama's BytePairEncoding.Encode holds a text's every pre-tokenizer split at once (the text
// as runes, 4 bytes a byte, each split as a string, and the regular expression's matches), over
// 10 bytes live per byte of text; a chunk bounds that to about a megabyte whatever the text's
// length. The ids are the same (see safeCut). The byte-level families tokenized as llama.cpp
// does are cut the same way (safeCutLlama: their pre-tokenizer holds each code point in several
// copies and each word as a string); a SentencePiece text (Gemma 3's, already cut at every line
// feed, a token of its own) is not.
const chunkBytes = 64 << 10

// encodeChunks tokenizes text, which holds no special token, with Ollama's tokenizer (or, for
// another family than Qwen3, llama.cpp's) in chunks of at least size bytes cut where safeCut
// (safeCutLlama) allows; a text with no safe cut past size, or a SentencePiece text, is
// tokenized whole. The ids are exactly those of one call on the whole text.
func (t *Tokenizer) encodeChunks(text string, size int) ([]int32, error) {
	if t.lv != nil && (t.lv.spm || len(text) <= size) {
		// A SentencePiece text is merged whole: no place in it is safe to cut at.
		return t.lv.encode(text, nil)
	}
	if t.spm != nil {
		return t.spm.Encode(text, false)
	}
	if len(text) <= size {
		return t.bpe.Encode(text, false)
	}
	cut := safeCut
	if t.lv != nil {
		cut = safeCutLlama
	}
	var ids []int32
	for len(text) > 0 {
		end := len(text)
		if len(text) > size {
			if e := cut(text, size); e > 0 {
				end = e
			}
		}
		var got []int32
		var err error
		if t.lv != nil {
			got, err = t.lv.encode(text[:end], nil)
		} else {
			got, err = t.bpe.Encode(text[:end], false)
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
		text = text[end:]
	}
	return ids, nil
}

// safeCutLlama is [safeCut] for the byte-level pre-tokenizers of llama.cpp's families
// (preTokenizerExprs: DeepSeek V3's, Llama 3's, gpt-4o's): the first byte offset e >= from (and
// > 0) right after a line feed followed by an ASCII letter, or -1. No expression matches a line
// feed followed by a letter: the letter runs' optional first character excludes \r and \n
// (DeepSeek's punctuation-then-letters alternative takes no line feed either), the
// punctuation runs take line feeds after them (and, for gpt-4o, '/') but no letter, and the
// white space ending in that line feed is matched by `\s*[\r\n]+`, which comes before the
// only lookahead, `\s+(?!\S)`; digits and CJK runs (DeepSeek's first two expressions) hold
// neither. So every expression splits there, on the collapsed text too (ASCII stays as it is),
// and the two sides split as they do in the whole text.
func safeCutLlama(text string, from int) int {
	for e := max(from, 1); e < len(text); e++ {
		if text[e-1] == '\n' && asciiLetter(text[e]) {
			return e
		}
	}
	return -1
}

// safeCut returns the first byte offset e >= from (and > 0) at which the qwen3 pre-tokenizer
// (qwen3Pretokenizer) splits text anyway, and splits text[:e] and text[e:] taken apart exactly
// as it splits text, so that tokenizing the two apart gives the ids of text (byte-pair merges
// never cross a split); -1 when there is none. Two kinds of place qualify, both in ASCII so that
// every regular-expression class sees them alike:
//
//   - after a line feed followed by a printable non-space character (0x21–0x7E): no alternative
//     of the pattern matches a line feed followed by anything but white space (a letter run and
//     a punctuation run exclude it; `[\r\n]*` and the white-space alternatives stop at the
//     non-space), and the white space ending in that line feed is matched by `\s*[\r\n]+`, which
//     comes before the only lookahead, `\s+(?!\S)`, and reads nothing past the line feed's
//     successor, where the two texts differ;
//   - at a space between two ASCII letters ("fox| jumps"): the letter run or contraction before
//     it ends there, no white-space match reaches it, and the next split starts at the space.
//
// The pattern has no lookbehind, so the splits of text[e:] do not depend on what came before.
func safeCut(text string, from int) int {
	for e := max(from, 1); e < len(text); e++ {
		switch c := text[e]; {
		case text[e-1] == '\n' && c >= 0x21 && c <= 0x7e:
			return e
		case c == ' ' && e+1 < len(text) && asciiLetter(text[e-1]) && asciiLetter(text[e+1]):
			return e
		}
	}
	return -1
}

func asciiLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// encodeWhole tokenizes text in one call of Ollama's tokenizer, as the runner does, without the
// memo (for tests).
func (t *Tokenizer) encodeWhole(text string) ([]int32, error) {
	if t.spm != nil {
		return t.spm.Encode(text, true)
	}
	if t.lv == nil {
		return t.bpe.Encode(text, true)
	}
	var ids []int32
	if t.addBOS {
		ids = append(ids, t.bos)
	}
	for _, p := range t.splitInOrder(text) {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		var err error
		if ids, err = t.lv.encode(p.text, ids); err != nil {
			return nil, err
		}
	}
	if t.addEOS {
		ids = append(ids, t.eos)
	}
	return ids, nil
}

// Decode returns the text of ids.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	if t.lv != nil {
		return t.lv.decode(ids)
	}
	if t.spm != nil {
		n := int32(len(t.spm.Vocabulary().Values))
		for _, id := range ids {
			if id < 0 || id >= n {
				return "", fmt.Errorf("decode tokens: id %d out of range", id)
			}
		}
		return t.spm.Decode(ids)
	}
	n := int32(len(t.bpe.Vocabulary().Values))
	for _, id := range ids {
		if id < 0 || id >= n {
			return "", fmt.Errorf("decode tokens: id %d out of range", id)
		}
	}
	s, err := t.bpe.Decode(ids)
	if err != nil {
		return "", fmt.Errorf("decode tokens: %w", err)
	}
	return s, nil
}

// readKV reads the key-value metadata of the GGUF file at path (the tensors are not read);
// errors name the file.
func readKV(path string) (ggml.KV, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", path, err)
	}
	return g.KV(), nil
}
