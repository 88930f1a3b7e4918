package lab

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// declared is what the module's Go code declares, by package name (the package clause: "openai"
// for backend/openai): top-level names, and per type its methods and struct fields.
type declared struct {
	names   map[string]map[string]bool            // package → top-level name
	members map[string]map[string]map[string]bool // package → type → method or field
	tests   map[string]bool                       // Test*, Fuzz*, Benchmark* functions
}

// scanGo parses every Go file of the module below root (test files for their test names only;
// testdata and results left out).
func scanGo(t *testing.T, root string) *declared {
	t.Helper()
	d := &declared{names: map[string]map[string]bool{}, members: map[string]map[string]map[string]bool{}, tests: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (n == "testdata" || n == "results" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
					d.tests[fn.Name.Name] = true
				}
			}
			return nil
		}
		pkg := f.Name.Name
		if d.names[pkg] == nil {
			d.names[pkg], d.members[pkg] = map[string]bool{}, map[string]map[string]bool{}
		}
		member := func(typ, name string) {
			if d.members[pkg][typ] == nil {
				d.members[pkg][typ] = map[string]bool{}
			}
			d.members[pkg][typ][name] = true
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					d.names[pkg][decl.Name.Name] = true
					continue
				}
				typ := decl.Recv.List[0].Type
				for {
					switch x := typ.(type) {
					case *ast.StarExpr:
						typ = x.X
						continue
					case *ast.IndexExpr:
						typ = x.X
						continue
					case *ast.IndexListExpr:
						typ = x.X
						continue
					}
					break
				}
				if id, ok := typ.(*ast.Ident); ok {
					member(id.Name, decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							d.names[pkg][n.Name] = true
						}
					case *ast.TypeSpec:
						d.names[pkg][spec.Name.Name] = true
						st, ok := spec.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								member(spec.Name.Name, n.Name)
							}
							if len(fl.Names) == 0 { // an embedded field is named by its type
								typ := fl.Type
								if s, ok := typ.(*ast.StarExpr); ok {
									typ = s.X
								}
								switch x := typ.(type) {
								case *ast.Ident:
									member(spec.Name.Name, x.Name)
								case *ast.SelectorExpr:
									member(spec.Name.Name, x.Sel.Name)
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// caseIDs returns the ids of every conformance case.
func caseIDs(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("conformance/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("conformance/*.json: %v (%d files)", err, len(files))
	}
	ids := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cases []struct {
				ID string `json:"id"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range doc.Cases {
			ids[c.ID] = true
		}
	}
	return ids
}

var (
	// codeSpan is a Markdown code span on one line.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// qualified is pkg.Name or pkg.Type.Member, as the docs name code.
	qualified = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Za-z][A-Za-z0-9]*)(?:\.([A-Za-z][A-Za-z0-9]*))?$`)
	// testName is a Go test, fuzz test or benchmark; a trailing * names every one it starts.
	testName = regexp.MustCompile(`\b((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)(\*?)`)
	// caseID is a conformance case id.
	caseID = regexp.MustCompile(`\b(?:ctx|reasoning|cachesim|paths-(?:env|resolve|display))-\d{3}\b`)
	// fileExt is a file-name suffix that reads like pkg.Name (report.md, loop.json).
	fileExt = map[string]bool{"md": true, "json": true, "jsonl": true, "yaml": true, "go": true, "txtar": true, "parquet": true, "html": true, "svg": true, "png": true}
)

// The documentation names only code that exists: every `pkg.Name` and `pkg.Type.Member` in
// docs/ is declared by that package of the module, every test it names is a test of the module,
// and every conformance case id it names is a case. The spec pages cover every section of spec
// 3.2.0 by number, and docs/design.md is there (README "Layout" points to both).
func TestDocsNameOnlyWhatExists(t *testing.T) {
	d := scanGo(t, ".")
	ids := caseIDs(t)
	var pages []string
	err := filepath.WalkDir("docs", func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("docs: %v", err)
	}
	for _, want := range []string{"docs/design.md", filepath.Join("docs", "spec", "README.md")} {
		if !slices.Contains(pages, filepath.FromSlash(want)) && !slices.Contains(pages, want) {
			t.Errorf("%s: missing", want)
		}
	}
	headings := ""
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for i, line := range strings.Split(text, "\n") {
			at := page + ":" + strconv.Itoa(i+1)
			if strings.HasPrefix(line, "#") && strings.HasPrefix(filepath.ToSlash(page), "docs/spec/") {
				headings += line + "\n"
			}
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				span := m[1]
				if q := qualified.FindStringSubmatch(span); q != nil && d.names[q[1]] != nil && !fileExt[q[2]] {
					pkg, name, mem := q[1], q[2], q[3]
					switch {
					case !d.names[pkg][name]:
						t.Errorf("%s: `%s`: package %s declares no %s", at, span, pkg, name)
					case mem != "" && !d.members[pkg][name][mem]:
						t.Errorf("%s: `%s`: %s.%s has no method or field %s", at, span, pkg, name, mem)
					}
				}
				for _, tm := range testName.FindAllStringSubmatch(span, -1) {
					if tm[2] == "*" {
						found := false
						for n := range d.tests {
							found = found || strings.HasPrefix(n, tm[1])
						}
						if !found {
							t.Errorf("%s: `%s`: no test starts with %s", at, span, tm[1])
						}
					} else if !d.tests[tm[1]] {
						t.Errorf("%s: `%s`: no test %s", at, span, tm[1])
					}
				}
			}
			for _, id := range caseID.FindAllString(line, -1) {
				if !ids[id] {
					t.Errorf("%s: %s: no such conformance case", at, id)
				}
			}
		}
	}
	for n := 1; n <= 11; n++ {
		if !regexp.MustCompile(`§` + strconv.Itoa(n) + `\b`).MatchString(headings) {
			t.Errorf("docs/spec: no heading names §%d", n)
		}
	}
	for n := 1; n <= 6; n++ {
		if !strings.Contains(headings, "§10."+strconv.Itoa(n)+" ") {
			t.Errorf("docs/spec: no heading names §10.%d", n)
		}
	}
}

// issueNumber is a reference to one of the project's own issues by its number: the word issue,
// then the number, with or without "#"; comments and docs name the concept instead. A citation of an upstream project's issue
// names its repository URL and is not matched.
var issueNumber = regexp.MustCompile(`(?i)\bissues? #?\d+\b`)

// Comments and documentation name concepts, never the project's issue numbers: the Go files (tests
// included), the Markdown, YAML and JSON files and the Makefile, leaving out what is data (test
// data, results, the scenarios' sessions and workspaces).
func TestNoIssueNumbers(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(path)
		if e.IsDir() {
			if n := e.Name(); path != "." && (n == "testdata" || n == "results" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if strings.HasPrefix(slash, "scenarios/") && ext != ".md" {
			return nil
		}
		if !map[string]bool{".go": true, ".md": true, ".yaml": true, ".yml": true, ".json": true, ".sh": true}[ext] && e.Name() != "Makefile" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := issueNumber.FindString(line); m != "" && !strings.Contains(line, "github.com/") {
				t.Errorf("%s:%d: names %q; name the concept instead", slash, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// designRooms returns the rows of docs/design.md's table of packages ("## Rooms (packages)"),
// each as its cells.
func designRooms(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## Rooms (packages)\n")
	if !ok {
		t.Fatal("docs/design.md: no section Rooms (packages)")
	}
	var rows [][]string
	for l := range strings.SplitSeq(rest, "\n") {
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
			break
		}
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// Each folder of docs/design.md's table of packages has one row, and a package's row names
// the lab packages its code imports (its non-test files), each once, no other.
func TestDesignRoomsOnceEach(t *testing.T) {
	seen := map[string]int{}
	folder := regexp.MustCompile("`([^`]+)`")
	for i, cells := range designRooms(t) {
		if len(cells) != 4 {
			t.Errorf("docs/design.md: table row %d has %d cells, want 4: %q", i+1, len(cells), cells)
			continue
		}
		for _, m := range folder.FindAllStringSubmatch(cells[0], -1) {
			if j, dup := seen[m[1]]; dup {
				t.Errorf("docs/design.md: %s has rows %d and %d of the table of packages", m[1], j, i+1)
			}
			seen[m[1]] = i + 1
		}
		pkgs := folder.FindAllStringSubmatch(cells[0], -1)
		if len(pkgs) != 1 || !slices.Contains([]string{"transcript", "importer"}, pkgs[0][1]) {
			continue
		}
		dir := pkgs[0][1]
		var listed []string
		for p := range strings.SplitSeq(cells[2], ", ") {
			p, _, _ = strings.Cut(p, " (")
			listed = append(listed, p)
		}
		slices.Sort(listed)
		got := map[string]bool{}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if p == "lab" || strings.HasPrefix(p, "lab/") {
					got[strings.TrimPrefix(p, "lab/")] = true
				}
			}
		}
		imports := slices.Sorted(maps.Keys(got))
		if !slices.Equal(listed, imports) {
			t.Errorf("docs/design.md: %s's row names the lab imports %q; its code imports %q", dir, listed, imports)
		}
	}
}
