package arms

import (
	"errors"
	"reflect"
	"testing"

	"lab/internal/fileerr"
)

// FuzzParse: any input either reads, each arm round-tripping through its manifest JSON, or fails
// with a *fileerr.SyntaxError naming the file; never a panic.
func FuzzParse(f *testing.F) {
	f.Add(builtinYAML)
	f.Add([]byte(userFile))
	f.Add([]byte("arms:\n  - name: a\n    description: d\n    practices: &p\n      - clock: {per_request: 1m}\n  - name: b\n    description: d\n    practices: *p\n"))
	f.Add([]byte("arms:\n  - name: a\n    description: d\n    practices:\n      - tool_list_churn: {every: 2.5, tool: [x]}\n      - prune: {protect_tokens: 0}\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := Parse("f.yaml", data)
		if err != nil {
			var se *fileerr.SyntaxError
			if !errors.As(err, &se) || se.File != "f.yaml" {
				t.Fatalf("error %v (%T) is not a *fileerr.SyntaxError for f.yaml", err, err)
			}
			return
		}
		for _, a := range list {
			b, err := FromJSON(a.JSON())
			if err != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: JSON round trip: %v", a.Name, err)
			}
		}
	})
}
