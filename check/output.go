package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MaxTextFailures is how many failures of one expectation [WriteText] prints; the rest are
// counted on one line ("… and 12 more"). [WriteJSON] writes every one.
const MaxTextFailures = 10

// WriteText writes r for people: one line per failure of each failed expectation,
//
//	FAIL midnight/spec rep 1 request 27: cached share 0.000 < 0.25 (cached tokens: simulation; first divergence: system) [checks/ci.yaml:9]
//
// then one line per session left out as incomplete ("LEFT OUT midnight/spec repetition 2 of run
// R: request 7 failed: …"), then a summary "3 expectations, 2 held, 1 failed". Held
// expectations print nothing.
func WriteText(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	for _, o := range r.Expectations {
		if o.Status != Failed {
			continue
		}
		for i, f := range o.Failures {
			if i == MaxTextFailures {
				fmt.Fprintf(bw, "FAIL %s: … and %d more failures of %s [%s:%d]\n", o.Scenario+"/"+o.Arm, len(o.Failures)-i, o.Description, r.File, o.Line)
				break
			}
			fmt.Fprintf(bw, "FAIL %s [%s:%d]\n", failureLine(&f), r.File, o.Line)
		}
	}
	for i := range r.LeftOut {
		fmt.Fprintf(bw, "LEFT OUT %s\n", r.LeftOut[i].String())
	}
	fmt.Fprintf(bw, "%d expectation%s, %d held, %d failed\n", len(r.Expectations), plural(len(r.Expectations)), r.Held, r.Failed)
	return bw.Flush()
}

// failureLine is a failure without the FAIL prefix: "midnight/spec rep 1 request 27: cached
// share 0.000 < 0.25 (cached tokens: simulation; first divergence: system)".
func failureLine(f *Failure) string {
	var b strings.Builder
	b.WriteString(f.Scenario + "/" + f.Arm)
	if f.Repetition > 0 {
		fmt.Fprintf(&b, " rep %d", f.Repetition)
	}
	if f.Request != nil {
		fmt.Fprintf(&b, " request %d", *f.Request)
	}
	b.WriteString(": " + f.Message)
	var notes []string
	switch f.CachedSource {
	case "":
	case CachedExpected:
		notes = append(notes, "expected cached tokens: the server did not say")
	default:
		notes = append(notes, "cached tokens: "+f.CachedSource)
	}
	if f.MaxRequest != nil {
		notes = append(notes, fmt.Sprintf("most in rep %d request %d: %s tokens", f.MaxRepetition, *f.MaxRequest, formatInt(f.MaxRequestTokens)))
	}
	if f.DivergenceSegment != "" && !strings.HasPrefix(f.Message, "diverged in") {
		notes = append(notes, "first divergence: "+f.DivergenceSegment)
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, "; ") + ")")
	}
	return b.String()
}

// WriteJSON writes r as one indented JSON document: the file, every expectation with its
// status, the figures it was checked on and its failures, and the held and failed counts.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
