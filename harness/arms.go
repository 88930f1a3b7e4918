package harness

import (
	"fmt"
	"strings"

	"lab/hygiene"
)

// Arm is a named set of measures: one column of the lab's comparison.
type Arm struct {
	Name string
	// Description is one line for `lab arms` and the report.
	Description string
	// Measures are the spec's measures the arm applies.
	Measures hygiene.Measures
}

// Arms returns every arm the lab knows, `spec` first.
func Arms() []Arm {
	dateInSystem := hygiene.Spec()
	dateInSystem.DateInNote = false
	return []Arm{
		{Name: "spec", Description: "every measure as spec 3.2.0 specifies", Measures: hygiene.Spec()},
		{Name: "date-in-system-prompt", Description: "the system prompt carries today's date and is rebuilt for every request, as several harnesses do (instead of §10.2's note)", Measures: dateInSystem},
	}
}

// SelectArms returns the arms named in a comma-separated list, or every arm for "all". An unknown
// name is an error listing the known ones.
func SelectArms(names string) ([]Arm, error) {
	all := Arms()
	if names == "all" || names == "" {
		return all, nil
	}
	var out []Arm
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, a := range all {
			if a.Name == n {
				out, found = append(out, a), true
				break
			}
		}
		if !found {
			known := make([]string, len(all))
			for i, a := range all {
				known[i] = a.Name
			}
			return nil, fmt.Errorf("unknown arm %q (known: %s, all)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}
