package arms

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// practiceDocs says, per practice, which harness behaviour it stands for (README "Arms").
var practiceDocs = map[string]string{
	"clock":           "a time line (the date, or the time to the minute or second) in the prompt, as harnesses that tell the model the time write one",
	"counter":         `a "tokens left" or "step N" line, as harnesses that tell the model its budget or its step write one`,
	"tool_order":      "the tool list in no fixed order, as harnesses that build it from a map or a set send it",
	"tool_list_churn": "a tool added or removed, or a description rewritten with a timestamp, every few requests (MCP servers reconnecting, tools filtered per step)",
	"prune":           "old tool output cleared in place once the output passes a threshold in tokens, the newest protected (opencode's prune)",
	"keep_last":       "only the newest N tool results kept, older ones elided from the start (SWE-agent's last N observations)",
	"window":          "whole oldest messages dropped when the context passes a size (a sliding window)",
	"insert":          "a reminder message inserted into the history and sent with every request (Claude Code's <system-reminder> messages)",
	"cwd":             "every session in a folder of its own, its absolute path in the system prompt or the tool descriptions",
	"instructions":    "an instruction file (AGENTS.md, CLAUDE.md) or git status in the system prompt, rebuilt when it changes",
	"reasoning":       "which assistant messages go back with their reasoning: never, this turn (spec 3.2.0 §8), all turns, or the last N messages",
}

// PracticeDoc returns one line on the harness behaviour the practice of that name stands for,
// "" for a name that is no practice's.
func PracticeDoc(name string) string { return practiceDocs[name] }

// Parameters returns the practice's parameters as "key value" pairs, in the order its type
// declares them, every default filled in ("granularity minute, place first_user, ..."). A
// parameter left empty says what that means, from its field's `empty` tag ("tool (the list's
// last tool)").
func (p Practice) Parameters() string {
	v := reflect.ValueOf(p.params())
	if !v.IsValid() {
		return ""
	}
	v = v.Elem()
	var out []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		val := ""
		switch x := f.Interface().(type) {
		case string:
			if x == "" && v.Type().Field(i).Tag.Get("empty") != "" {
				val = "(" + v.Type().Field(i).Tag.Get("empty") + ")"
			} else if strings.ContainsAny(x, " \n\"{") {
				val = fmt.Sprintf("%q", x)
			} else {
				val = x
			}
		case Duration:
			b, _ := x.MarshalText()
			val = string(b)
		default:
			if s, ok := x.(fmt.Stringer); ok {
				val = s.String()
			} else {
				val = fmt.Sprint(x)
			}
			if f.Kind() == reflect.String {
				val = f.String()
			}
		}
		out = append(out, v.Type().Field(i).Tag.Get("yaml")+" "+val)
	}
	return strings.Join(out, ", ")
}

// Off lists the measures of spec 3.2.0 the arm switches off, by [MeasureNames] name.
func (a Arm) Off() []string {
	var out []string
	for _, name := range MeasureNames() {
		if !MeasureOn(a.Measures, name) {
			out = append(out, name)
		}
	}
	return out
}

// on lists the measures on in the arm's Measures, by [MeasureNames] name.
func (a Arm) on() []string {
	var out []string
	for _, name := range MeasureNames() {
		if MeasureOn(a.Measures, name) {
			out = append(out, name)
		}
	}
	return out
}

// Describe writes what the arm does, on several lines: its name and source, its description,
// the measures it switches off, and each practice with its parameters and what it stands for.
func (a Arm) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n  %s\n", a.Name, a.Source, a.Description)
	if off := a.Off(); len(off) == 0 {
		b.WriteString("  measures: every measure of spec 3.2.0\n")
	} else if len(off) == len(MeasureNames()) {
		b.WriteString("  measures: none (every measure off)\n")
	} else if on := a.on(); len(on) < len(off) {
		fmt.Fprintf(&b, "  measures: none of spec 3.2.0 but %s\n", strings.Join(on, ", "))
	} else {
		fmt.Fprintf(&b, "  measures: spec 3.2.0 but %s off\n", strings.Join(off, ", "))
	}
	for _, p := range a.Practices {
		fmt.Fprintf(&b, "  practice %s: %s\n    %s\n", p.Name(), p.Parameters(), PracticeDoc(p.Name()))
	}
	return b.String()
}

// JSON returns the arm as the manifest records it ([Arm]'s JSON).
func (a Arm) JSON() json.RawMessage {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err) // an arm is plain data: strings, numbers, booleans
	}
	return b
}

// FromJSON reads an arm as [Arm.JSON] wrote it (a manifest's arm_definitions), its Measures
// rebuilt from the measures it lists as on. An unknown measure name is an error.
func FromJSON(raw json.RawMessage) (Arm, error) {
	var a Arm
	if err := json.Unmarshal(raw, &a); err != nil {
		return Arm{}, fmt.Errorf("arm definition: %w", err)
	}
	for _, name := range a.On {
		p := measureField(&a.Measures, name)
		if p == nil {
			return Arm{}, fmt.Errorf("arm definition %q: unknown measure %q", a.Name, name)
		}
		*p = true
	}
	return a, nil
}

// Summary is the arm on one line: its name and source, the measures off (or, when fewer are on
// than off, the measures on: "no measure but diffs"), and each practice with its parameters ("prune-opencode (arms.yaml:2): every measure; prune (threshold_tokens 60000, …)").
func (a Arm) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): ", a.Name, a.Source)
	switch off := a.Off(); {
	case len(off) == 0:
		b.WriteString("every measure")
	case len(off) == len(MeasureNames()):
		b.WriteString("no measure")
	case len(a.on()) < len(off):
		b.WriteString("no measure but " + strings.Join(a.on(), ", "))
	default:
		b.WriteString("every measure but " + strings.Join(off, ", "))
	}
	for _, p := range a.Practices {
		fmt.Fprintf(&b, "; %s (%s)", p.Name(), p.Parameters())
	}
	return b.String()
}
