// Package conformance holds the spec 3.2.0 conformance cases (conformance/<area>.json, embedded)
// and runs them against the lab's implementation. Each area's file is
// {"area", "spec", "cases"}; each case is {"id", "section", "description", "input", "want"},
// decoded strictly. The areas are "context" (§1-§7, §10's note: context.json), "reasoning" (§8:
// reasoning.json) and "paths" (§11: paths.json). `go test ./conformance` and `lab conformance`
// run the same cases.
package conformance

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

//go:embed *.json
var files embed.FS

// Case is one conformance case: {"id", "section", "description", "input", "want"}. Input and Want
// are the area's own formats (conformance/README.md).
type Case struct {
	// ID is unique across every area's file ("ctx-001").
	ID string `json:"id"`
	// Section is the spec section the case comes from, starting with "§" ("§2").
	Section string `json:"section"`
	// Description says in words what the case checks.
	Description string `json:"description"`
	// Input is what is run, in the area's format.
	Input json.RawMessage `json:"input"`
	// Want is the exact expected outcome, in the area's format.
	Want json.RawMessage `json:"want"`
}

// File is one area's file: {"area", "spec", "cases"}.
type File struct {
	// Area names the area; it equals the file's name without ".json".
	Area string `json:"area"`
	// Spec is the spec version the cases follow ("3.2.0").
	Spec string `json:"spec"`
	// Cases are the area's cases in file order.
	Cases []Case `json:"cases"`
}

// checkers maps an area to the function that runs one of its cases against the lab's
// implementation: nil when the case passes, else an error naming the first difference. An
// explicit map, no init registration: context.go, reasoning.go and paths.go hold the checkers.
var checkers = map[string]func(Case) error{
	"context":   checkContext,
	"reasoning": checkReasoning,
	"paths":     checkPaths,
	"cachesim":  checkCachesim,
}

// areaOrder is the order Areas lists the areas in.
var areaOrder = []string{"context", "reasoning", "paths", "cachesim"}

// ErrUnknownArea is returned (wrapped) by Load and Run for an area with no file or no checker.
var ErrUnknownArea = errors.New("unknown conformance area")

// Areas returns the areas that have both a file and a checker, in the order "context",
// "reasoning", "paths".
func Areas() []string {
	var out []string
	for _, a := range areaOrder {
		if _, ok := checkers[a]; !ok {
			continue
		}
		if _, err := files.Open(a + ".json"); err != nil {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Load decodes the embedded <area>.json strictly (an unknown field is an error) and returns its
// cases in file order. An area with no file is ErrUnknownArea; a file whose "area" differs from
// its name, or a case with no id or a section not starting with "§", is an error.
func Load(area string) ([]Case, error) {
	data, err := files.ReadFile(area + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownArea, area, strings.Join(Areas(), ", "))
	}
	f, err := parseFile(data)
	if err != nil {
		return nil, fmt.Errorf("conformance/%s.json: %w", area, err)
	}
	if f.Area != area {
		return nil, fmt.Errorf("conformance/%s.json: area %q, want %q", area, f.Area, area)
	}
	return f.Cases, nil
}

func parseFile(data []byte) (*File, error) {
	var f File
	if err := decodeStrict(data, &f); err != nil {
		return nil, err
	}
	for i, c := range f.Cases {
		if c.ID == "" {
			return nil, fmt.Errorf("case %d: no id", i+1)
		}
		if !strings.HasPrefix(c.Section, "§") {
			return nil, fmt.Errorf("case %s: section %q does not start with §", c.ID, c.Section)
		}
		if len(c.Input) == 0 || len(c.Want) == 0 {
			return nil, fmt.Errorf("case %s: input and want are required", c.ID)
		}
	}
	return &f, nil
}

// decodeStrict decodes one JSON value into v, failing on an unknown field or trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// decodeCase decodes a case's input and want strictly ([decodeStrict]) into in and want; the
// error says which of the two is wrong ("input: …", "want: …").
func decodeCase(c Case, in, want any) error {
	if err := decodeStrict(c.Input, in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := decodeStrict(c.Want, want); err != nil {
		return fmt.Errorf("want: %w", err)
	}
	return nil
}

// Result is one case's outcome.
type Result struct {
	// Case is the case that was run.
	Case Case
	// Err is nil when the case passed; else it names the first differing line.
	Err error
}

// Check runs one case of area against the lab's implementation: nil when it passes, else an error
// naming the first difference. An area with no checker is ErrUnknownArea.
func Check(area string, c Case) error {
	check, ok := checkers[area]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownArea, area)
	}
	return check(c)
}

// Run runs every case of area against the lab's implementation, in file order. The error is for
// an area that cannot be run (ErrUnknownArea, a file that does not parse); failing cases are
// Results with a non-nil Err.
func Run(area string) ([]Result, error) {
	check, ok := checkers[area]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownArea, area, strings.Join(Areas(), ", "))
	}
	cases, err := Load(area)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = Result{Case: c, Err: check(c)}
	}
	return out, nil
}

// diffText compares an expected text with the text produced and names the first differing line
// (1-based), or a difference in line count; nil when equal. what names the output ("output 3
// (read)"). Area checkers use it so every failure reads the same way.
func diffText(what, want, got string) error {
	if want == got {
		return nil
	}
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	for i := 0; i < len(w) && i < len(g); i++ {
		if w[i] != g[i] {
			return fmt.Errorf("%s: line %d: want %q, got %q", what, i+1, w[i], g[i])
		}
	}
	if len(w) > len(g) {
		return fmt.Errorf("%s: got %d lines, want %d: line %d missing: want %q", what, len(g), len(w), len(g)+1, w[len(g)])
	}
	return fmt.Errorf("%s: got %d lines, want %d: extra line %d: %q", what, len(g), len(w), len(w)+1, g[len(w)])
}

// Report is the outcome of running one or more areas: what `lab conformance --json` prints.
type Report struct {
	// Spec is the spec version the cases follow.
	Spec string `json:"spec"`
	// Areas are the areas run, in order.
	Areas []string `json:"areas"`
	// Passed and Failed count the cases.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// Cases lists every case run, in area and file order.
	Cases []CaseResult `json:"cases"`
}

// CaseResult is one case's line in a Report.
type CaseResult struct {
	ID          string `json:"id"`
	Area        string `json:"area"`
	Section     string `json:"section"`
	Description string `json:"description"`
	Passed      bool   `json:"passed"`
	// Error names the first difference; empty when the case passed.
	Error string `json:"error,omitempty"`
}

// RunAreas runs every case of the given areas (every area of Areas when none is given) and
// reports each case. An unknown area is ErrUnknownArea before any case runs.
func RunAreas(areas ...string) (*Report, error) {
	if len(areas) == 0 {
		areas = Areas()
	}
	for _, a := range areas {
		if _, ok := checkers[a]; !ok {
			return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownArea, a, strings.Join(Areas(), ", "))
		}
	}
	rep := &Report{Spec: "3.2.0", Areas: areas, Cases: []CaseResult{}}
	for _, a := range areas {
		results, err := Run(a)
		if err != nil {
			return nil, err
		}
		for _, r := range results {
			cr := CaseResult{ID: r.Case.ID, Area: a, Section: r.Case.Section, Description: r.Case.Description, Passed: r.Err == nil}
			if r.Err != nil {
				cr.Error = r.Err.Error()
				rep.Failed++
			} else {
				rep.Passed++
			}
			rep.Cases = append(rep.Cases, cr)
		}
	}
	return rep, nil
}
