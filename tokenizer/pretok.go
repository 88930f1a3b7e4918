package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// preTokenizer splits a text (holding no special token) into the words a byte-level BPE
// tokenizes one by one, as llama.cpp's unicode_regex_split does (src/unicode.cpp as Ollama
// v0.17.4 vendors it, with the one change of llama-server b11669's that the lab's tests found,
// see collapsedClasses): each of its regular
// expressions in turn splits every piece the previous one left (matches and the gaps between
// them both become pieces), on a "collapsed" copy of the text where every code point of 128
// and above stands for its class — white space, a letter, a number, punctuation, a mark, a
// symbol, or other — and each \p{...} of the expression for the class's stand-in and its ASCII
// members. The expressions as llama.cpp rewrites them make its counts differ from Hugging
// Face's in a few places (gpt-4o's has no \p{M}, so a Devanagari vowel sign ends a word); this
// type reproduces llama.cpp's.
type preTokenizer struct {
	steps []preStep
	// collapse is whether any step needs the collapsed text.
	collapse bool
}

// preStep is one regular expression of a preTokenizer.
type preStep struct {
	re *regexp2.Regexp
	// collapsed is whether re runs on the collapsed text (the expression named a \p{...}
	// class); otherwise it runs on the code points, non-ASCII white space replaced by \v.
	collapsed bool
}

// Stand-ins of the collapsed text for code points of 128 and above (unicode.cpp k_ucat_cpt).
const (
	collapsedOther       = 0xD0
	collapsedNumber      = 0xD1
	collapsedLetter      = 0xD2
	collapsedPunctuation = 0xD3
	collapsedMark        = 0xD4
	collapsedSymbol      = 0xD5
	collapsedSpace       = 0x0B // white space: \v, which \s matches
)

// collapsedClasses maps each \p{...} class llama.cpp collapses to its stand-in and its ASCII
// members (unicode.cpp k_ucat_enum, k_ucat_cpt, k_ucat_map). '~' is a symbol as in llama-server
// b11669 (measured: DeepSeek V3's " ~/x" is the npm package's ids); the older copy vendored by
// Ollama v0.17.4 leaves it out of \p{S}.
var collapsedClasses = map[string]string{
	`\p{N}`: string(rune(collapsedNumber)) + `0-9`,
	`\p{L}`: string(rune(collapsedLetter)) + `A-Za-z`,
	`\p{P}`: string(rune(collapsedPunctuation)) + `!-#%-*,-/:-;?-@\[-\]_\{\}`,
	`\p{M}`: string(rune(collapsedMark)),
	`\p{S}`: string(rune(collapsedSymbol)) + "\\$\\+<->^`\\|~",
}

// llamaWhitespace is llama.cpp's set of white-space code points (unicode-data.cpp
// unicode_set_whitespace).
var llamaWhitespace = map[rune]bool{
	0x09: true, 0x0A: true, 0x0B: true, 0x0C: true, 0x0D: true, 0x20: true, 0x85: true, 0xA0: true,
	0x1680: true, 0x2000: true, 0x2001: true, 0x2002: true, 0x2003: true, 0x2004: true, 0x2005: true,
	0x2006: true, 0x2007: true, 0x2008: true, 0x2009: true, 0x200A: true, 0x2028: true, 0x2029: true,
	0x202F: true, 0x205F: true, 0x3000: true,
}

// preTokenizerExprs holds, by tokenizer.ggml.pre, the regular expressions llama.cpp's
// llm_tokenizer_bpe splits with (src/llama-vocab.cpp), written as llama.cpp writes them.
var preTokenizerExprs = map[string][]string{
	// LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM: digits in runs of up to three, then runs of CJK
	// ideographs and kana, then DeepSeek's word and punctuation expression.
	"deepseek-v3": {
		`\p{N}{1,3}`,
		`[一-龥぀-ゟ゠-ヿ]+`,
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	},
	// LLAMA_VOCAB_PRE_TYPE_QWEN2 (qwen2): Qwen2's expression (tokenizer.json's) with the
	// case-insensitive contractions spelt out, digits one at a time. Only [LoadFamilyJSONLlama]
	// runs it: the lab counts Qwen3 as Ollama does otherwise.
	"qwen2": {
		`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	},
	// LLAMA_VOCAB_PRE_TYPE_LLAMA3 (llama-bpe, llama3, llama-v3): Llama 3's expression with the
	// case-insensitive contractions spelt out (llama.cpp runs it as hand-written code,
	// unicode_regex_split_custom_llama3, meant to be the same).
	"llama-bpe": {
		`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	},
	// LLAMA_VOCAB_PRE_TYPE_GPT4O (gpt-4o, llama4): o200k's expression as llama.cpp adapts it:
	// upper and lower case told apart by ASCII ranges, no \p{M}.
	"gpt-4o": {
		`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	},
}

// preAliases maps other tokenizer.ggml.pre names llama.cpp treats alike to a key of
// preTokenizerExprs.
var preAliases = map[string]string{"llama3": "llama-bpe", "llama-v3": "llama-bpe", "llama4": "gpt-4o"}

// ignoreMergesPre lists the pre-tokenizers for which llama.cpp takes a word that is itself a
// token whole, before any merge (llama-vocab.cpp sets ignore_merges for LLAMA3 only among
// these: not for gpt-4o, although gpt-oss's tokenizer.json says ignore_merges).
var ignoreMergesPre = map[string]bool{"llama-bpe": true}

// newPreTokenizer compiles the expressions of the pre-tokenizer named pre (tokenizer.ggml.pre);
// an unknown name is an error naming the known ones.
func newPreTokenizer(pre string) (*preTokenizer, error) {
	if a, ok := preAliases[pre]; ok {
		pre = a
	}
	exprs, ok := preTokenizerExprs[pre]
	if !ok {
		return nil, fmt.Errorf("pre-tokenizer %q is not one the lab reproduces (qwen2, deepseek-v3, llama-bpe, gpt-4o)", pre)
	}
	p := &preTokenizer{}
	for _, e := range exprs {
		collapsed := false
		for c := range collapsedClasses {
			if strings.Contains(e, c) {
				collapsed = true
			}
		}
		if collapsed {
			e = collapseExpr(e)
		}
		re, err := regexp2.Compile(e, regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("pre-tokenizer %q: %w", pre, err)
		}
		p.steps = append(p.steps, preStep{re: re, collapsed: collapsed})
		p.collapse = p.collapse || collapsed
	}
	return p, nil
}

// collapseExpr rewrites expr for the collapsed text as unicode.cpp does: each \p{X} of
// collapsedClasses becomes its stand-in and ASCII members, inside a bracket expression as they
// are, outside it wrapped in one.
func collapseExpr(expr string) string {
	var sb strings.Builder
	inside := false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c == '[' && (i == 0 || expr[i-1] != '\\') {
			sb.WriteByte('[')
			inside = true
			continue
		}
		if inside && c == ']' && expr[i-1] != '\\' {
			sb.WriteByte(']')
			inside = false
			continue
		}
		if c == '\\' && i+4 < len(expr) && expr[i+1] == 'p' && expr[i+2] == '{' && expr[i+4] == '}' {
			if cls, ok := collapsedClasses[expr[i:i+5]]; ok {
				if !inside {
					sb.WriteByte('[')
				}
				sb.WriteString(cls)
				if !inside {
					sb.WriteByte(']')
				}
				i += 4
				continue
			}
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// collapseRune returns the collapsed text's stand-in for r (unicode.cpp unicode_regex_split).
func collapseRune(r rune) rune {
	switch {
	case r < 128:
		return r
	case llamaWhitespace[r]:
		return collapsedSpace
	case unicode.Is(unicode.N, r):
		return collapsedNumber
	case unicode.Is(unicode.L, r):
		return collapsedLetter
	case unicode.Is(unicode.P, r):
		return collapsedPunctuation
	case unicode.Is(unicode.M, r):
		return collapsedMark
	case unicode.Is(unicode.S, r):
		return collapsedSymbol
	}
	return collapsedOther
}

// split returns the words of text, each a substring of text; their concatenation is text. An
// invalid UTF-8 byte counts as one code point (U+FFFD) of one byte.
func (p *preTokenizer) split(text string) ([]string, error) {
	if text == "" {
		return nil, nil
	}
	// The byte offset of every code point, and the two texts the expressions run on.
	offs := make([]int, 0, len(text)+1)
	cpts := make([]rune, 0, len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		offs = append(offs, i)
		cpts = append(cpts, r)
		i += n
	}
	offs = append(offs, len(text))
	var collapsed, spaced []rune
	for _, s := range p.steps {
		if s.collapsed && collapsed == nil {
			collapsed = make([]rune, len(cpts))
			for i, r := range cpts {
				collapsed[i] = collapseRune(r)
			}
		}
		if !s.collapsed && spaced == nil {
			spaced = make([]rune, len(cpts))
			for i, r := range cpts {
				if r > 0x7f && llamaWhitespace[r] {
					r = collapsedSpace
				}
				spaced[i] = r
			}
		}
	}
	// lens are the pieces' lengths in code points.
	lens := []int{len(cpts)}
	for _, s := range p.steps {
		in := spaced
		if s.collapsed {
			in = collapsed
		}
		var next []int
		start := 0
		for _, n := range lens {
			sub := in[start : start+n : start+n]
			at := 0
			m, err := s.re.FindRunesMatch(sub)
			for ; m != nil && err == nil; m, err = s.re.FindNextMatch(m) {
				if m.Index > at {
					next = append(next, m.Index-at)
				}
				if m.Length > 0 {
					next = append(next, m.Length)
				}
				at = m.Index + m.Length
			}
			if err != nil {
				return nil, fmt.Errorf("pre-tokenize: %w", err)
			}
			if at < n {
				next = append(next, n-at)
			}
			start += n
		}
		lens = next
	}
	words := make([]string, len(lens))
	start := 0
	for i, n := range lens {
		words[i] = text[offs[start]:offs[start+n]]
		start += n
	}
	return words, nil
}
