package check

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/scenario"
)

var testKnown = Known{
	Scenarios: []string{"edit-loop", "midnight", "unchanged-rereads"},
	Arms:      []string{"spec", "date-in-system-prompt", "plain"},
}

func ptr[T any](v T) *T { return &v }

func TestLoadYAML(t *testing.T) {
	path := filepath.Join("testdata", "ok.yaml")
	f, err := Load(path, testKnown)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Path:      path,
		Scenarios: []string{"midnight", "unchanged-rereads"},
		Arms:      []string{"spec", "date-in-system-prompt"},
		Repeat:    2,
		Expect: []Expectation{
			{Line: 6, Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.9), FromRequest: 2, ExceptTurnStarts: true},
			{Line: 11, Scenario: "midnight", Arm: "*", NoDivergenceBefore: SegmentTools, FromRequest: 1},
			{Line: 14, Scenario: "*", Arm: "spec", MaxRereadTokens: ptr(int64(60000))},
		},
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("Load(%s) mismatch (-want +got):\n%s", path, d)
	}
	if got, want := f.Expect[0].String(), "midnight/spec: cached share ≥ 0.9 from request 2, except at turn starts"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if got, want := f.Expect[2].String(), "*/spec: re-read tokens ≤ 60,000"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

// JSON is YAML: the same decoder reads it. Without scenarios and repeat keys, the file runs
// the scenarios its expectations name, once; "message" means the conversation.
func TestLoadJSON(t *testing.T) {
	path := filepath.Join("testdata", "ok.json")
	f, err := Load(path, testKnown)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Path:      path,
		Scenarios: []string{"midnight", "edit-loop"},
		Arms:      []string{"spec"},
		Repeat:    1,
		Expect: []Expectation{
			{Line: 4, Scenario: "midnight", Arm: "spec", NoDivergenceBefore: SegmentConversation, FromRequest: 1},
			{Line: 5, Scenario: "edit-loop", Arm: "spec", MinCachedShare: ptr(1.0), FromRequest: 1},
		},
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("Load(%s) mismatch (-want +got):\n%s", path, d)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "nonexistent.yaml"), testKnown)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v; want fs.ErrNotExist", err)
	}
}

// "all" expands to the known names.
func TestParseAll(t *testing.T) {
	f, err := Parse("c.yaml", []byte("scenarios: all\narms: [all]\nexpect:\n  - {scenario: '*', arm: spec, max_reread_tokens: 0}\n"), testKnown)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(testKnown.Scenarios, f.Scenarios); d != "" {
		t.Errorf("scenarios (-want +got):\n%s", d)
	}
	if d := cmp.Diff(testKnown.Arms, f.Arms); d != "" {
		t.Errorf("arms (-want +got):\n%s", d)
	}
}

// Every mistake is a *SyntaxError "file:line: message".
func TestParseErrors(t *testing.T) {
	const e = "expect:\n  - scenario: midnight\n    arm: spec\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "  \n", "c.yaml: empty file"},
		{"not a mapping", "- a\n", "c.yaml:1: check file: want a mapping, got a list"},
		{"yaml syntax", "expect: [\n", "c.yaml:"},
		{"unknown top key", "scenario: [midnight]\n" + e + "    max_reread_tokens: 1\n", `c.yaml:1: check file: unknown key "scenario" (known: scenarios, arms, repeat, expect)`},
		{"unknown expectation key", e + "    min_cached_shares: 0.9\n", `c.yaml:4: expectation: unknown key "min_cached_shares"`},
		{"repeated key", e + "    max_reread_tokens: 1\n    max_reread_tokens: 2\n", `c.yaml:5: expectation: key "max_reread_tokens" given twice (first at line 4)`},
		{"no expect", "scenarios: [midnight]\n", "c.yaml:1: no expect list"},
		{"empty expect", "expect: []\n", "c.yaml:1: expect: the list is empty: a check file needs at least one expectation"},
		{"expect not a list", "expect: 3\n", "c.yaml:1: expect: want a list of expectations, got 3"},
		{"unknown scenario", "expect:\n  - scenario: midnite\n    arm: spec\n    max_reread_tokens: 1\n", `c.yaml:2: scenario: unknown scenario "midnite" (known: edit-loop, midnight, unchanged-rereads, or "*" for every one)`},
		{"unknown arm", "expect:\n  - scenario: midnight\n    arm: spek\n    max_reread_tokens: 1\n", `c.yaml:3: arm: unknown arm "spek"`},
		{"unknown listed scenario", "scenarios: [midnight, nope]\n" + e + "    max_reread_tokens: 1\n", `c.yaml:1: scenario: unknown scenario "nope"`},
		{"unknown listed arm", "arms:\n  - spec\n  - nope\n" + e + "    max_reread_tokens: 1\n", `c.yaml:3: arm: unknown arm "nope"`},
		{"listed twice", "arms: [spec, spec]\n" + e + "    max_reread_tokens: 1\n", `c.yaml:1: arm: "spec" listed twice`},
		{"expectation outside the list", "scenarios: [edit-loop]\n" + e + "    max_reread_tokens: 1\n", `c.yaml:3: "midnight" is not among the file's scenarios (edit-loop)`},
		{"missing arm", "expect:\n  - scenario: midnight\n    max_reread_tokens: 1\n", "c.yaml:2: expectation: missing arm"},
		{"scenario a number", "expect:\n  - scenario: 3\n    arm: spec\n    max_reread_tokens: 1\n", "c.yaml:2: scenario: want a name, got 3"},
		{"no condition", e, "c.yaml:2: expectation: no condition: want one of min_cached_share, no_divergence_before or max_reread_tokens"},
		{"two conditions", e + "    min_cached_share: 0.5\n    max_reread_tokens: 1\n", "c.yaml:5: expectation: both min_cached_share and max_reread_tokens"},
		{"share above 1", e + "    min_cached_share: 90\n", "c.yaml:4: min_cached_share: 90 is outside 0..1"},
		{"negative share", e + "    min_cached_share: -0.1\n", "c.yaml:4: min_cached_share: -0.1 is outside 0..1"},
		{"share NaN", e + "    min_cached_share: .nan\n", "c.yaml:4: min_cached_share: .nan is outside 0..1"},
		{"share a string", e + "    min_cached_share: high\n", `c.yaml:4: min_cached_share: want a share between 0 and 1, got "high"`},
		{"share a quoted number", e + "    min_cached_share: '0.9'\n", `c.yaml:4: min_cached_share: want a share between 0 and 1, got "0.9"`},
		{"negative reread", e + "    max_reread_tokens: -5\n", "c.yaml:4: max_reread_tokens: -5 is negative"},
		{"fractional reread", e + "    max_reread_tokens: 1.5\n", "c.yaml:4: max_reread_tokens: want a whole number, got 1.5"},
		{"negative from_request", e + "    min_cached_share: 0.5\n    from_request: -1\n", "c.yaml:5: from_request: -1 is negative"},
		{"from_request with reread", e + "    max_reread_tokens: 5\n    from_request: 2\n", "c.yaml:5: from_request goes with min_cached_share or no_divergence_before"},
		{"except_turn_starts alone", e + "    no_divergence_before: tools\n    except_turn_starts: true\n", "c.yaml:5: except_turn_starts goes with min_cached_share only"},
		{"except_turn_starts not bool", e + "    min_cached_share: 0.5\n    except_turn_starts: yes please\n", `c.yaml:5: except_turn_starts: want true or false, got "yes please"`},
		{"divergence before system", e + "    no_divergence_before: system\n", "c.yaml:4: no_divergence_before: system: no segment comes before the system prompt"},
		{"unknown segment", e + "    no_divergence_before: prologue\n", `c.yaml:4: no_divergence_before: unknown segment "prologue"`},
		{"repeat zero", "repeat: 0\n" + e + "    max_reread_tokens: 1\n", "c.yaml:1: repeat: want at least 1"},
		{"second document", e + "    max_reread_tokens: 1\n---\nexpect: []\n", "c.yaml:5: a second YAML document"},
		{"json unknown key", `{"expect": [{"scenario": "midnight", "arm": "spec", "max": 1}]}`, `c.yaml:1: expectation: unknown key "max"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.yaml", []byte(tc.in), testKnown)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v; want a *SyntaxError", tc.in, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %q; want it to start with %q", tc.in, err, tc.want)
			}
		})
	}
}

// A check file's mistake and a scenario file's are one error type: whoever tells a wrong file the
// user wrote from another failure (lab's exit code 2) matches both with one errors.As.
func TestSyntaxErrorIsTheScenarioOne(t *testing.T) {
	_, err := Parse("c.yaml", []byte("expect: 3\n"), testKnown)
	var se *scenario.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse = %v (%T); want an error errors.As matches with *scenario.SyntaxError", err, err)
	}
	if se.File != "c.yaml" || se.Line != 1 {
		t.Errorf("SyntaxError = %+v; want File c.yaml, Line 1", *se)
	}
}

// With nil known lists every name passes (but "all" cannot be expanded).
func TestParseUnknownNamesWithoutKnown(t *testing.T) {
	if _, err := Parse("c.yaml", []byte("expect:\n  - {scenario: mine, arm: custom, max_reread_tokens: 1}\n"), Known{}); err != nil {
		t.Errorf("Parse with nil Known = %v; want nil", err)
	}
	_, err := Parse("c.yaml", []byte("scenarios: all\nexpect:\n  - {scenario: mine, arm: custom, max_reread_tokens: 1}\n"), Known{})
	if err == nil || !strings.HasPrefix(err.Error(), `c.yaml:1: scenario: "all" needs`) {
		t.Errorf("Parse(scenarios: all) with nil Known = %v; want an error at line 1", err)
	}
}

func TestSegmentRank(t *testing.T) {
	for _, tc := range []struct {
		seg  string
		rank int
		ok   bool
	}{
		{"system", 0, true},
		{"tools", 1, true},
		{"message 0", 2, true},
		{"message 12", 2, true},
		{"reasoning 3", 2, true},
		{"tool result 7", 2, true},
		{"note", 2, true},
		{"generation prompt", 2, true},
		{"message", 0, false},
		{"message x", 0, false},
		{"prologue", 0, false},
	} {
		rank, ok := segmentRank(tc.seg)
		if rank != tc.rank || ok != tc.ok {
			t.Errorf("segmentRank(%q) = %d, %v; want %d, %v", tc.seg, rank, ok, tc.rank, tc.ok)
		}
	}
}

func TestFormatInt(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 60000: "60,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := formatInt(in); got != want {
			t.Errorf("formatInt(%d) = %q; want %q", in, got, want)
		}
	}
}
