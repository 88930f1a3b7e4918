package tokenizer

import (
	"container/heap"
	"fmt"
	"strings"
)

// llamaVocab tokenizes text that holds no special token as llama.cpp's tokenizer does
// (src/llama-vocab.cpp, llama-server's): a byte-level BPE (llm_tokenizer_bpe_session: the
// pre-tokenizer's words, each merged by rank, the lowest first) or a SentencePiece vocabulary
// (llm_tokenizer_spm_session: the text's spaces written as ▁, its characters merged by score,
// the highest first, and what forms no token written as byte tokens). It is read-only once
// built, so safe for concurrent use.
type llamaVocab struct {
	tokens []string
	types  []int32
	// toID maps a token's text to its id; of two tokens with one text, the later id
	// (llama.cpp's token_to_id is filled in id order).
	toID map[string]int32

	// Byte-level BPE: ranks maps "left right" to the merge's rank; pre splits the words.
	ranks        map[mergePair]int
	pre          *preTokenizer
	ignoreMerges bool

	// SentencePiece: scores by id.
	spm    bool
	scores []float32
}

// newLlamaVocab builds the vocabulary's maps; merges are "left right" strings (split at the
// first space after the first byte, as llama.cpp does).
func newLlamaVocab(tokens []string, types []int32, merges []string, scores []float32) *llamaVocab {
	v := &llamaVocab{tokens: tokens, types: types, toID: make(map[string]int32, len(tokens))}
	for i, s := range tokens {
		v.toID[s] = int32(i)
	}
	if scores != nil {
		v.spm, v.scores = true, scores
		return v
	}
	v.ranks = make(map[mergePair]int, len(merges))
	for r, m := range merges {
		var p mergePair
		if j := strings.IndexByte(m[min(1, len(m)):], ' '); j >= 0 {
			j += min(1, len(m))
			p = mergePair{m[:j], m[j+1:]}
		}
		if _, ok := v.ranks[p]; !ok {
			v.ranks[p] = r
		}
	}
	return v
}

// mergePair is a merge's left and right token texts.
type mergePair struct{ left, right string }

// symbol is a run of a word's bytes, linked to its neighbours (llama.cpp llm_symbol).
type symbol struct {
	prev, next int
	start, n   int
}

// mergeRight merges symbol right into its left neighbour left, as both of llama.cpp's merge
// loops do: left takes right's bytes and next, right is emptied (n 0: skipped from then on).
func mergeRight(syms []symbol, left, right int) {
	l, r := &syms[left], &syms[right]
	l.n += r.n
	r.n = 0
	l.next = r.next
	if r.next >= 0 {
		syms[r.next].prev = left
	}
}

// bigram is a candidate merge of two adjacent symbols; for BPE key is the merge's rank (lower
// first), for SentencePiece the score of the merged token (higher first); ties go to the left.
type bigram struct {
	left, right int
	rank        int
	score       float32
	size        int
	text        string
}

// bigramQueue is a priority queue of bigrams, llama.cpp's comparators.
type bigramQueue struct {
	b   []bigram
	spm bool
}

func (q *bigramQueue) Len() int { return len(q.b) }
func (q *bigramQueue) Less(i, j int) bool {
	a, b := q.b[i], q.b[j]
	if q.spm {
		return a.score > b.score || a.score == b.score && a.left < b.left
	}
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}
func (q *bigramQueue) Swap(i, j int) { q.b[i], q.b[j] = q.b[j], q.b[i] }
func (q *bigramQueue) Push(x any)    { q.b = append(q.b, x.(bigram)) }
func (q *bigramQueue) Pop() any {
	x := q.b[len(q.b)-1]
	q.b = q.b[:len(q.b)-1]
	return x
}

// symbolsOf cuts word into its UTF-8 characters (an invalid or cut-off sequence as llama.cpp's
// unicode_len_utf8 measures it, from its first byte).
func symbolsOf(word string) []symbol {
	var syms []symbol
	for off := 0; off < len(word); {
		n := min(utf8LenOf(word[off]), len(word)-off)
		next := len(syms) + 1
		if off+n == len(word) {
			next = -1
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: next, start: off, n: n})
		off += n
	}
	return syms
}

// utf8LenOf is llama.cpp's unicode_len_utf8: the length of a UTF-8 sequence from its first byte.
func utf8LenOf(c byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[c>>4]
}

// encode appends the ids of text, which holds no special token, to ids.
func (v *llamaVocab) encode(text string, ids []int32) ([]int32, error) {
	if v.spm {
		return v.encodeSPM(strings.ReplaceAll(text, " ", "▁"), ids), nil
	}
	words, err := v.pre.split(text)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		ids = v.encodeBPEWord(byteEncode(w), ids)
	}
	return ids, nil
}

// encodeBPEWord appends the ids of one byte-encoded word (llm_tokenizer_bpe_session::tokenize).
func (v *llamaVocab) encodeBPEWord(word string, ids []int32) []int32 {
	if id, ok := v.toID[word]; ok && v.ignoreMerges {
		return append(ids, id)
	}
	syms := symbolsOf(word)
	q := &bigramQueue{}
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		a := word[syms[l].start : syms[l].start+syms[l].n]
		b := word[syms[r].start : syms[r].start+syms[r].n]
		rank, ok := v.ranks[mergePair{a, b}]
		if !ok {
			return
		}
		heap.Push(q, bigram{left: l, right: r, rank: rank, text: a + b, size: len(a) + len(b)})
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		bg := heap.Pop(q).(bigram)
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size || word[l.start:l.start+l.n+r.n] != bg.text {
			continue
		}
		mergeRight(syms, bg.left, bg.right)
		add(l.prev, bg.left)
		add(bg.left, l.next)
	}
	for _, s := range syms {
		if s.n == 0 {
			continue
		}
		str := word[s.start : s.start+s.n]
		if id, ok := v.toID[str]; ok {
			ids = append(ids, id)
			continue
		}
		for j := range len(str) {
			if id, ok := v.toID[str[j:j+1]]; ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// encodeSPM appends the ids of text, spaces already written as ▁ (llm_tokenizer_spm_session).
func (v *llamaVocab) encodeSPM(text string, ids []int32) []int32 {
	syms := symbolsOf(text)
	q := &bigramQueue{spm: true}
	revMerge := map[string][2]int{}
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s := text[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
		id, ok := v.toID[s]
		if !ok {
			return
		}
		heap.Push(q, bigram{left: l, right: r, score: v.scores[id], size: len(s)})
		revMerge[s] = [2]int{l, r}
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		bg := heap.Pop(q).(bigram)
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		mergeRight(syms, bg.left, bg.right)
		add(l.prev, bg.left)
		add(bg.left, l.next)
	}
	var resegment func(s symbol)
	resegment = func(s symbol) {
		str := text[s.start : s.start+s.n]
		if id, ok := v.toID[str]; ok {
			ids = append(ids, id)
			return
		}
		if p, ok := revMerge[str]; ok {
			resegment(syms[p[0]])
			resegment(syms[p[1]])
			return
		}
		for j := range len(str) {
			ids = append(ids, v.byteToken(str[j]))
		}
	}
	if len(syms) > 0 {
		for i := 0; i != -1; i = syms[i].next {
			resegment(syms[i])
		}
	}
	return ids
}

// byteToken is the SentencePiece byte-fallback token of c, <0xXX> (llama.cpp byte_to_token),
// else the token of the byte itself.
func (v *llamaVocab) byteToken(c byte) int32 {
	if id, ok := v.toID[fmt.Sprintf("<0x%02X>", c)]; ok {
		return id
	}
	return v.toID[string([]byte{c})]
}

// decode returns the text of ids: byte-level tokens mapped back to their bytes (or, for
// SentencePiece, ▁ to a space and byte tokens to their byte); control and user-defined tokens
// as they are written.
func (v *llamaVocab) decode(ids []int32) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		if id < 0 || int(id) >= len(v.tokens) {
			return "", fmt.Errorf("decode tokens: id %d out of range", id)
		}
		s, typ := v.tokens[id], v.types[id]
		switch {
		case typ == tokenTypeControl || typ == tokenTypeUserDefined || typ == tokenTypeUnknown:
			sb.WriteString(s)
		case v.spm && typ == tokenTypeByte:
			var b byte
			fmt.Sscanf(s, "<0x%02X>", &b)
			sb.WriteByte(b)
		case v.spm:
			sb.WriteString(strings.ReplaceAll(s, "▁", " "))
		default:
			for _, r := range s {
				if b, ok := unicodeToByte[r]; ok {
					sb.WriteByte(b)
				} else {
					sb.WriteRune(r)
				}
			}
		}
	}
	return sb.String(), nil
}

// Token types of a GGUF vocabulary, llama.cpp's numbering (see gguf.TokenTypeNormal).
const (
	tokenTypeUnknown     = 2
	tokenTypeControl     = 3
	tokenTypeUserDefined = 4
	tokenTypeByte        = 6
)

// byteToUnicode is GPT-2's byte-level alphabet (bytes_to_unicode; llama.cpp
// unicode_byte_to_utf8): printable Latin-1 bytes stand for themselves, the others for U+0100
// and on; unicodeToByte is its inverse.
var byteToUnicode, unicodeToByte = func() ([256]string, map[rune]byte) {
	var b2u [256]string
	u2b := map[rune]byte{}
	n := 0
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = rune(256 + n)
			n++
		}
		b2u[b] = string(r)
		u2b[r] = byte(b)
	}
	return b2u, u2b
}()

// byteEncode writes each byte of s as its byte-level character.
func byteEncode(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		sb.WriteString(byteToUnicode[s[i]])
	}
	return sb.String()
}
