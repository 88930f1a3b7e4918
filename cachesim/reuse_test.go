package cachesim

import (
	"slices"
	"testing"
)

// The chunk search of llama-server's update_slots (server-context.cpp): after the common prefix
// the cache head moves one token at a time until a run of at least minChunk equal tokens starts
// at the prompt head; that run is reused and both heads move past it.
func TestChunkReuse(t *testing.T) {
	a, b, c, d := seq(0, 10), seq(100, 3), seq(200, 8), seq(300, 5)
	x, y := seq(400, 2), seq(500, 4)
	for _, tc := range []struct {
		name       string
		cache, p   []int32
		min        int
		want       int
		wantChunks []TokenRange
	}{
		// Tokens b left out of the prompt: the 8 tokens of c after them are one chunk.
		{"one chunk after a deletion", cat(a, b, c), cat(a, c, d), 4, 18, []TokenRange{{10, 18}}},
		{"off", cat(a, b, c), cat(a, c, d), 0, 10, nil},
		{"a chunk shorter than the minimum", cat(a, b, c), cat(a, c, d), 9, 10, nil},
		{"exactly the minimum", cat(a, b, c), cat(a, c, d), 8, 18, []TokenRange{{10, 18}}},
		// A token replaced (b by x: a date line that changed) stops the search: only the cache
		// head moves, so the prompt's x must start a chunk, and the cache has none.
		{"a replacement", cat(a, b, c), cat(a, x, c, d), 4, 10, nil},
		// Two chunks: the cache's b and y are skipped.
		{"two chunks", cat(a, b, c, y, d), cat(a, c, d), 4, 23, []TokenRange{{10, 18}, {18, 23}}},
		// The cache head only moves forward: d, passed before c was found, is not found again.
		{"order kept", cat(a, d, b, c), cat(a, c, d), 4, 18, []TokenRange{{10, 18}}},
		{"no cache", nil, cat(a, b), 4, 0, nil},
		{"whole prompt cached", cat(a, b), cat(a, b), 4, 13, nil},
	} {
		n, chunks := ChunkReuse(tc.cache, tc.p, tc.min)
		if n != tc.want || !slices.Equal(chunks, tc.wantChunks) {
			t.Errorf("%s: ChunkReuse = %d, %v; want %d, %v", tc.name, n, chunks, tc.want, tc.wantChunks)
		}
	}
	// The server evaluates at least one prompt token: a chunk that ends the prompt loses its last.
	n, chunks := reuseChunks(cat(a, b, c), cat(a, c), 4)
	if n != 17 || !slices.Equal(chunks, []TokenRange{{10, 17}}) {
		t.Errorf("reuseChunks(a chunk ending the prompt) = %d, %v; want 17, [{10 17}]", n, chunks)
	}
}

// The re-read positions of a prompt with reused chunks: after the prefix, less the chunks.
func TestRereadRanges(t *testing.T) {
	chunks := []TokenRange{{12, 20}, {22, 27}}
	got := rereadRanges(23, 30, chunks) // prefix 10, chunks 13
	want := []TokenRange{{10, 12}, {20, 22}, {27, 30}}
	if !slices.Equal(got, want) {
		t.Errorf("rereadRanges = %v; want %v", got, want)
	}
	if got := rereadRanges(10, 30, nil); !slices.Equal(got, []TokenRange{{10, 30}}) {
		t.Errorf("rereadRanges(no chunks) = %v", got)
	}
}
