package scriptmodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ReadEvents reads the events file a [Server] wrote ([Options].Events: one JSON [Event] a
// line). Errors name the file and line.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// The outcomes of a step ([StepOutcome].Outcome).
const (
	// Served: the scripted model answered a request with the step.
	Served = "served"
	// Skipped: the agent offered no tool for the step's intent.
	Skipped = "skipped"
	// NotReached: no request came for the step (the agent stopped early, or its turn failed
	// before).
	NotReached = "not reached"
)

// StepOutcome is what became of one step of the script in a run.
type StepOutcome struct {
	// Turn and Step are 1-based; Intent is the step as written.
	Turn, Step int
	Intent     string
	// Outcome is [Served], [Skipped] (Why says why) or [NotReached].
	Outcome string
	Why     string
	// Errors are the errors of requests answered with this step ([Event].Error), such as an
	// upstream that failed the prefill.
	Errors []string
}

// Progress returns the outcome of every step of s in a run whose events are evs, in script
// order.
func (s *Script) Progress(evs []Event) []StepOutcome {
	type key struct{ t, s int }
	served := map[key]bool{}
	errs := map[key][]string{}
	why := map[key]string{}
	for _, e := range evs {
		k := key{e.Turn, e.Step}
		if e.Turn > 0 {
			if e.Error == "" {
				served[k] = true
			} else {
				errs[k] = append(errs[k], e.Error)
			}
		}
		for _, sk := range e.Skipped {
			var t, st int
			if _, err := fmt.Sscanf(sk, "turn=%d step=%d", &t, &st); err == nil {
				if _, r, ok := strings.Cut(sk, ": "); ok {
					why[key{t, st}] = r
				} else {
					why[key{t, st}] = sk
				}
			}
		}
	}
	var out []StepOutcome
	for t, tr := range s.Turns {
		for i, st := range tr.Steps {
			k := key{t + 1, i + 1}
			o := StepOutcome{Turn: t + 1, Step: i + 1, Intent: st.Intent.String(), Errors: errs[k]}
			switch {
			case served[k]:
				o.Outcome = Served
			case why[k] != "":
				o.Outcome, o.Why = Skipped, why[k]
			default:
				o.Outcome = NotReached
			}
			out = append(out, o)
		}
	}
	return out
}
