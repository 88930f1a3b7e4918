package hygiene

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkInsertIntoLargeSession inserts one result, one read and one search into a session that
// is empty ("small") and into one already holding about 100,000 tokens of results ("large":
// 1,000 results of 400 characters, about 4 characters a token, and 100 reads of files). The cost
// per op must be the same: an insertion costs time proportional to the result, not the session.
func BenchmarkInsertIntoLargeSession(b *testing.B) {
	cfg, err := ParseConfig(labLoopJSON())
	if err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("x", 39) + "\n"
	result := strings.Repeat(line, 10) // 400 characters
	file := []byte(strings.Repeat(line, 50))
	for _, size := range []struct {
		name    string
		results int
	}{{"small", 0}, {"large", 1000}} {
		b.Run(size.name, func(b *testing.B) {
			s, _ := NewSession(cfg, Spec())
			for i := range size.results {
				s.Result(result)
				if i%10 == 0 {
					s.Read(ReadRequest{Path: fmt.Sprint("f", i), AbsPath: fmt.Sprint("/p/f", i), Content: file})
					s.Search("grep", json.RawMessage(fmt.Sprintf(`{"pattern":"p%d"}`, i)), result)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				s.Result(result)
				s.Read(ReadRequest{Path: "g", AbsPath: fmt.Sprint("/q/g", i), Content: file})
				s.Search("grep", json.RawMessage(`{"pattern":"q"}`), result)
			}
		})
	}
}
