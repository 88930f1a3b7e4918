package stats_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoLabPackage keeps stats pure numbers: none of its files (tests included) imports
// a lab package, so that the statistics can be read, tested and reused without the row.
func TestImportsNoLabPackage(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files here: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "lab" || (strings.HasPrefix(path, "lab/") && path != "lab/stats") {
				t.Errorf("%s: imports %s; stats imports no lab package", fset.Position(imp.Pos()), path)
			}
		}
	}
}
