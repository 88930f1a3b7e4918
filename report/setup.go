package report

import (
	"fmt"
	"slices"
	"strings"

	"lab/metrics"
)

// SetupInfo describes one setup ([metrics.Setup]) of the runs a report reads: the runs of one
// setup are pooled as repetitions, the runs of different setups never are.
type SetupInfo struct {
	// Label names the setup in the report: "A", "B", … in the order the runs were given.
	Label string `json:"label"`
	// Setup is what its runs measured with.
	Setup metrics.Setup `json:"setup"`
	// Runs are the run ids of its runs, in the order given.
	Runs []string `json:"runs"`
	// Unknown names what some run of the setup did not record, so that the report can say what
	// its pooling could not check: "model file digest" (pooled by the model's name), "scenario
	// contents of run R" (a run made before the lab recorded them), "host of run R".
	Unknown []string `json:"unknown,omitempty"`
}

// SetupGroup is the runs of one setup and their samples, as [GroupSetups] returns them.
type SetupGroup struct {
	Info SetupInfo
	// Runs are the manifests of the setup's runs, in the order given; where Samples renames a
	// scenario, a copy of the run's manifest whose session records name it as Samples do.
	Runs []*metrics.Manifest
	// Samples are the runs' samples, in the order given. Where a scenario name has more than one
	// content among the runs ([metrics.Manifest].ScenarioDigests), each content is another
	// scenario: its samples' Scenario is "<name> [content <first 12 hex digits>]" ("[content
	// unknown]" for a run that did not record it), so that nothing downstream pools them. When
	// the runs are of one setup and no scenario is renamed, Samples is the caller's slice itself
	// (no row is copied): read it, do not change it.
	Samples []metrics.Sample
	// shared says Samples is the caller's slice.
	shared bool
}

// GroupSetups splits runs (and samples, matched to their run by run id) by setup, in the order
// of each setup's first run; samples of a run id without a manifest go with the first setup when
// there is only one, else into a group of their own whose setup is unknown. It returns nil when
// there are no runs.
func GroupSetups(runs []*metrics.Manifest, samples []metrics.Sample) []SetupGroup {
	groups, of := setupsOf(runs, len(samples), func(i int) string { return samples[i].RunID })
	if len(groups) == 0 {
		return nil
	}
	if len(groups) == 1 {
		// Every sample goes with the one setup: the group shares the caller's slice (read
		// only; splitContents copies it before renaming a scenario).
		groups[0].Samples, groups[0].shared = samples, true
	} else {
		for i := range samples {
			g := &groups[of(i)]
			g.Samples = append(g.Samples, samples[i])
		}
	}
	for i := range groups {
		g := &groups[i]
		splitContents(g, len(g.Samples), func(i int) (string, string, string) {
			return g.Samples[i].RunID, g.Samples[i].Scenario, g.Samples[i].Arm
		},
			func() {
				if g.shared {
					g.Samples, g.shared = slices.Clone(g.Samples), false
				}
			},
			func(i int, sc, arm string) { g.Samples[i].Scenario, g.Samples[i].Arm = sc, arm })
	}
	return groups
}

// rowGroup is a [SetupGroup] whose rows are a [metrics.Rows].
type rowGroup struct {
	SetupGroup
	rows *metrics.Rows
}

// groupSetupRows is [GroupSetups] of rows: one setup's group shares rows itself unless a scenario
// is renamed.
func groupSetupRows(runs []*metrics.Manifest, rows *metrics.Rows) []rowGroup {
	setups, of := setupsOf(runs, rows.Len(), rows.RunID)
	groups := make([]rowGroup, len(setups))
	for gi := range groups {
		groups[gi].SetupGroup = setups[gi]
		if len(setups) == 1 {
			groups[gi].rows, groups[gi].shared = rows, true
		} else {
			groups[gi].rows = rows.Select(func(i int) bool { return of(i) == gi })
		}
	}
	for i := range groups {
		g := &groups[i]
		splitContents(&g.SetupGroup, g.rows.Len(), func(i int) (string, string, string) { return g.rows.RunID(i), g.rows.Scenario(i), g.rows.Arm(i) },
			func() {
				if g.shared {
					g.rows, g.shared = g.rows.Select(func(int) bool { return true }), false
				}
			},
			func(i int, sc, arm string) { g.rows.SetScenario(i, sc); g.rows.SetArm(i, arm) })
	}
	return groups
}

// setupsOf returns the setup groups of runs (without their rows), in the order of each setup's
// first run, and the group of each of n rows, whose run id runID gives: rows of a run id without
// a manifest go with the first setup when there is only one, else into a group of their own whose
// setup is unknown, after the others. It returns no group when there are no runs.
func setupsOf(runs []*metrics.Manifest, n int, runID func(i int) string) (groups []SetupGroup, of func(i int) int) {
	byKey := map[string]int{}
	ofRun := map[string]int{}
	for _, m := range runs {
		if m == nil {
			continue
		}
		st := metrics.SetupOf(m)
		k := st.Key()
		i, ok := byKey[k]
		if !ok {
			i = len(groups)
			byKey[k] = i
			groups = append(groups, SetupGroup{Info: SetupInfo{Label: setupLabel(i), Setup: st}})
		}
		g := &groups[i]
		g.Runs = append(g.Runs, m)
		g.Info.Runs = append(g.Info.Runs, m.RunID)
		ofRun[m.RunID] = i
	}
	if len(groups) <= 1 {
		return groups, func(int) int { return 0 }
	}
	orphan := -1
	for i := range n {
		if _, ok := ofRun[runID(i)]; !ok {
			orphan = len(groups)
			groups = append(groups, SetupGroup{Info: SetupInfo{Label: setupLabel(orphan),
				Unknown: []string{"the setup (samples of run ids without a manifest)"}}})
			break
		}
	}
	return groups, func(i int) int {
		if gi, ok := ofRun[runID(i)]; ok {
			return gi
		}
		return orphan
	}
}

// setupLabel returns "A" for 0, "B" for 1, …, "Z", then "AA", "AB", ….
func setupLabel(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('A'+(i-1)%26)) + s
	}
	return s
}

// splitContents renames the rows of a scenario with more than one content in g, and of an arm
// with more than one definition (see [SetupGroup].Samples), and records in g.Info.Unknown what
// its runs did not record. The group has n rows; at gives a row's run id, scenario and arm, own
// is called once before the first rename (the group's rows may be the caller's), and rename
// renames row i's scenario and arm (either may be unchanged).
func splitContents(g *SetupGroup, n int, at func(i int) (run, scenario, arm string), own func(), rename func(i int, scenario, arm string)) {
	scDigest := map[string]map[string]string{}  // run id → scenario → digest
	armDigest := map[string]map[string]string{} // run id → arm → definition digest
	for _, m := range g.Runs {
		scDigest[m.RunID] = m.ScenarioDigests
		armDigest[m.RunID] = m.ArmDigests()
		if len(m.ScenarioDigests) == 0 {
			g.Info.Unknown = append(g.Info.Unknown, "scenario contents of run "+orDash(m.RunID))
		}
		if m.Host == nil {
			g.Info.Unknown = append(g.Info.Unknown, "host of run "+orDash(m.RunID))
		}
	}
	if len(g.Runs) > 0 && g.Info.Setup.ModelDigest == "" {
		g.Info.Unknown = append([]string{"model file digest"}, g.Info.Unknown...)
	}
	scContents := map[string][]string{} // scenario → its distinct digests
	armContents := map[string][]string{}
	add := func(m map[string][]string, key, d string) {
		if !slices.Contains(m[key], d) {
			m[key] = append(m[key], d)
		}
	}
	for i := range n {
		run, sc, arm := at(i)
		add(scContents, sc, scDigest[run][sc])
		add(armContents, arm, armDigest[run][arm])
	}
	renames := false
	for _, ds := range scContents {
		renames = renames || len(ds) > 1
	}
	for _, ds := range armContents {
		renames = renames || len(ds) > 1
	}
	names := func(run, sc, arm string) (string, string) {
		if len(scContents[sc]) > 1 {
			sc = ContentName(sc, scDigest[run][sc])
		}
		if len(armContents[arm]) > 1 {
			arm = DefinitionName(arm, armDigest[run][arm])
		}
		return sc, arm
	}
	if renames {
		own()
		for i := range n {
			run, sc, arm := at(i)
			if nsc, narm := names(run, sc, arm); nsc != sc || narm != arm {
				rename(i, nsc, narm)
			}
		}
	}
	// The runs' session records name the scenarios and arms as the samples now do, so that
	// [Sessions] still matches each session to its record: the group holds copies, the caller's
	// manifests keep their own.
	for i, m := range g.Runs {
		renamed := false
		for _, r := range m.Sessions {
			sc, arm := names(m.RunID, r.Scenario, r.Arm)
			renamed = renamed || sc != r.Scenario || arm != r.Arm
		}
		if !renamed {
			continue
		}
		c := *m
		c.Sessions = slices.Clone(m.Sessions)
		for j := range c.Sessions {
			r := &c.Sessions[j]
			r.Scenario, r.Arm = names(m.RunID, r.Scenario, r.Arm)
		}
		g.Runs[i] = &c
	}
}

// DefinitionName is the name a report gives arm name of definition digest
// ([metrics.Manifest.ArmDigests]) when the runs it pools define the name more than once (an arm
// file edited between runs): "prune-20k [definition 1a2b3c4d5e6f]", or "prune-20k [definition
// unknown]" for a run that did not record it.
func DefinitionName(name, digest string) string {
	if digest == "" {
		return name + " [definition unknown]"
	}
	return fmt.Sprintf("%s [definition %s]", name, metrics.ShortDigest(digest))
}

// ContentName is the name a report gives scenario name of content digest when the runs it
// pools hold the name with more than one content: "midnight [content 1a2b3c4d5e6f]", or
// "midnight [content unknown]" for a run that did not record it.
func ContentName(name, digest string) string {
	if digest == "" {
		return name + " [content unknown]"
	}
	return fmt.Sprintf("%s [content %s]", name, metrics.ShortDigest(digest))
}

// Groups returns the analyses a report shows: [Analysis].Setups when the runs are of several
// setups, else a itself.
func (a *Analysis) Groups() []*Analysis {
	if len(a.Setups) > 0 {
		return a.Setups
	}
	return []*Analysis{a}
}

// describe is the one-line description of a setup for people: "backend sim, server version
// cachesim llamacpp, model qwen3 (model file digest unknown), num_ctx 32,768, cache start cold,
// cache_model=llamacpp, driver=scripted".
func (s *SetupInfo) describe() string {
	st := s.Setup
	digest := "model file digest unknown"
	if st.ModelDigest != "" {
		digest = "model file " + st.ModelDigest
	}
	parts := []string{
		"backend " + orDash(st.Backend), "server version " + orDash(st.ServerVersion),
		fmt.Sprintf("model %s (%s)", orDash(st.Model), digest), "num_ctx " + numCtx(st.NumCtx), "cache start " + orDash(st.CacheStart),
	}
	for _, k := range metrics.SetupSettings {
		if v, ok := st.Settings[k]; ok {
			parts = append(parts, k+"="+inline(v))
		}
	}
	return strings.Join(parts, ", ")
}

// setupDiffs names what differs between the setups of groups: each part of [metrics.Setup.Parts]
// whose value is not the same in all, with the values per setup ("cache_model: A llamacpp, B
// vllm").
func setupDiffs(groups []*Analysis) []string {
	var out []string
	if len(groups) == 0 || groups[0].Setup == nil {
		return nil
	}
	first := groups[0].Setup.Setup.Parts()
	for i, p := range first {
		same := true
		vals := make([]string, len(groups))
		for j, g := range groups {
			if g.Setup == nil {
				return out
			}
			q := g.Setup.Setup.Parts()[i]
			same = same && q.Value == p.Value
			vals[j] = g.Setup.Label + " " + q.Shown()
		}
		if !same {
			out = append(out, p.Name+": "+strings.Join(vals, ", "))
		}
	}
	return out
}
