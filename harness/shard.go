package harness

import (
	"lab/scenario"
)

// MatrixSession is one session of a run's matrix: a scenario × arm × repetition, with its number
// in the matrix's run order.
type MatrixSession struct {
	// Number is the session's 0-based place in the run order: repetition by repetition, each
	// with every scenario in order, each with every arm in order.
	Number int
	// Scenario and Arm index RunConfig.Scenarios and RunConfig.Arms; Repetition is 1-based.
	Scenario, Arm, Repetition int
}

// Sessions returns the sessions of the matrix that cfg's shard runs, in run order: every
// session of the matrix for the zero Shard; for shard i of n, round robin, the sessions whose
// Number mod n is i−1 (shard 1/2 runs sessions 0, 2, 4, …, shard 2/2 sessions 1, 3, 5, …). The
// n shards together run every session exactly once; a shard with a higher index than the matrix
// has sessions runs none.
func (c *RunConfig) Sessions() []MatrixSession {
	var out []MatrixSession
	k := 0
	for rep := 1; rep <= max(c.Repeat, 1); rep++ {
		for si := range c.Scenarios {
			for ai := range c.Arms {
				if c.Shard.Has(k) {
					out = append(out, MatrixSession{Number: k, Scenario: si, Arm: ai, Repetition: rep})
				}
				k++
			}
		}
	}
	return out
}

// sessionRequests is the number of requests one session of sc sends: one per assistant step and
// one per compaction.
func sessionRequests(sc *scenario.Scenario) int {
	n := 0
	for _, st := range sc.Steps {
		if st.Assistant != nil || st.Compact != nil {
			n++
		}
	}
	return n
}
