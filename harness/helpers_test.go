package harness_test

import "strings"

// calls wraps scripted calls into a scenario: base's user step, one assistant step with the calls
// (line 9 on), and a final answer.
func calls(lines ...string) string {
	return base + "  - assistant:\n      calls:\n" + strings.Join(lines, "\n") + "\n  - assistant:\n      text: done\n"
}
