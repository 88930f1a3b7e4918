package pricing

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"lab/chat"
)

func i64(v int64) *int64 { return &v }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestDefaultParses(t *testing.T) {
	tab, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Models()) < 10 {
		t.Errorf("Models = %v; want the Anthropic table", tab.Models())
	}
	for _, m := range tab.Models() {
		p, _ := tab.Lookup(m)
		if p.Source == "" || p.Read.IsZero() || p.Input <= 0 || p.Output <= 0 {
			t.Errorf("%s: %+v: want a source, a date and prices", m, p)
		}
		// A check for typos: Anthropic's multipliers are 5m write 1.25×, 1h write 2× the input
		// price (Claude 3 Haiku's published $0.30 rounds 1.25 × $0.25: within 5 %).
		within := func(got, want float64) bool { return math.Abs(got-want) <= 0.05*want }
		if p.Scheme == SchemeAnthropic && (!within(p.CacheWrite5m, 1.25*p.Input) || !within(p.CacheWrite1h, 2*p.Input)) {
			t.Errorf("%s: cache writes %v/%v for input %v; want 1.25× and 2×", m, p.CacheWrite5m, p.CacheWrite1h, p.Input)
		}
	}
}

func TestCostAnthropic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model string
		u     *chat.Usage
		want  float64
		ok    bool
	}{
		// 50 uncached × $5 + 100000 read × $0.50 + 200 × $6.25 + 1000 × $10 + 1 out × $25, per 10⁶.
		{"split writes", "claude-opus-4-5", &chat.Usage{Uncached: i64(50), CachedRead: i64(100000), CacheWrite: i64(1200),
			CacheWrite5m: i64(200), CacheWrite1h: i64(1000), Generated: i64(1)}, 0.061525, true},
		{"uncached from prompt", "claude-opus-4-5", &chat.Usage{Prompt: i64(101250), CachedRead: i64(100000), CacheWrite: i64(1200),
			CacheWrite5m: i64(200), CacheWrite1h: i64(1000), Generated: i64(1)}, 0.061525, true},
		{"1h only given", "claude-opus-4-5", &chat.Usage{Uncached: i64(50), CachedRead: i64(100000), CacheWrite: i64(1200),
			CacheWrite1h: i64(1000), Generated: i64(1)}, 0.061525, true},
		// Dated snapshot of Opus 4 ($15 / $1.50 / $18.75 / $30 / $75): 1000×15 + 2000×1.5 + 100×75.
		{"dated snapshot, no writes", "claude-opus-4-20250514", &chat.Usage{Uncached: i64(1000), CachedRead: i64(2000), CacheWrite: i64(0),
			Generated: i64(100)}, 0.0255, true},
		{"unknown model", "claude-unknown", &chat.Usage{Uncached: i64(1), CachedRead: i64(0), CacheWrite: i64(0), Generated: i64(1)}, 0, false},
		{"nil usage", "claude-opus-4-5", nil, 0, false},
		{"cached read unknown", "claude-opus-4-5", &chat.Usage{Uncached: i64(1), CacheWrite: i64(0), Generated: i64(1)}, 0, false},
		{"write unknown", "claude-opus-4-5", &chat.Usage{Uncached: i64(1), CachedRead: i64(0), Generated: i64(1)}, 0, false},
		{"write split unknown", "claude-opus-4-5", &chat.Usage{Uncached: i64(1), CachedRead: i64(0), CacheWrite: i64(5), Generated: i64(1)}, 0, false},
		{"generated unknown", "claude-opus-4-5", &chat.Usage{Uncached: i64(1), CachedRead: i64(0), CacheWrite: i64(0)}, 0, false},
		// Sonnet 4 is priced up to 200K prompt tokens only.
		{"at the tier limit", "claude-sonnet-4-20250514", &chat.Usage{Uncached: i64(200000), CachedRead: i64(0), CacheWrite: i64(0), Generated: i64(0)}, 0.6, true},
		{"over the tier limit", "claude-sonnet-4-20250514", &chat.Usage{Uncached: i64(200001), CachedRead: i64(0), CacheWrite: i64(0), Generated: i64(0)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Cost(tc.model, tc.u)
			if ok != tc.ok || !near(got, tc.want) {
				t.Errorf("Cost(%s) = %v, %v; want %v, %v", tc.model, got, ok, tc.want, tc.ok)
			}
		})
	}
}

const openaiTable = `models:
  gpt-test:
    scheme: openai
    input: 1.25
    cached_read: 0.125
    output: 10
    source: https://example.com/pricing
    read: 2026-11-30
`

func TestCostOpenAI(t *testing.T) {
	tab, err := Parse("test.yaml", []byte(openaiTable))
	if err != nil {
		t.Fatal(err)
	}
	// (10000 − 8000) × $1.25 + 8000 × $0.125 + 100 × $10, per 10⁶.
	u := &chat.Usage{Prompt: i64(10000), CachedRead: i64(8000), Generated: i64(100)}
	if got, ok := tab.Cost("gpt-test-2026-04-01", u); !ok || !near(got, 0.0045) {
		t.Errorf("Cost = %v, %v; want 0.0045, true", got, ok)
	}
	if _, ok := tab.Cost("gpt-test", &chat.Usage{CachedRead: i64(0), Generated: i64(1)}); ok {
		t.Error("Cost without Prompt: ok")
	}
	if _, ok := tab.Cost("gpt-test", &chat.Usage{Prompt: i64(10), CachedRead: i64(20), Generated: i64(1)}); ok {
		t.Error("Cost with more cached than prompt: ok")
	}
}

func TestParseErrors(t *testing.T) {
	entry := func(extra string) string {
		return "models:\n  m:\n    scheme: anthropic\n    input: 1\n    cached_read: 0.1\n    cache_write_5m: 1.25\n    cache_write_1h: 2\n    output: 5\n    source: https://example.com/p\n    read: 2026-11-30\n" + extra
	}
	if _, err := Parse("ok.yaml", []byte(entry(""))); err != nil {
		t.Fatalf("the base entry: %v", err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"unknown top key", "prices: {}\n", "x.yaml:1: unknown key \"prices\""},
		{"unknown field", entry("    discount: 5\n"), "x.yaml:11: model m: unknown key \"discount\""},
		{"bad price", strings.Replace(entry(""), "output: 5", "output: five", 1), "x.yaml:8: model m: \"five\" is not a price"},
		{"negative price", strings.Replace(entry(""), "input: 1", "input: -1", 1), "x.yaml:4:"},
		{"missing price", strings.Replace(entry(""), "    cache_write_1h: 2\n", "", 1), "x.yaml:2: model m: cache_write_1h missing"},
		{"bad date", strings.Replace(entry(""), "2026-11-30", "30/11/2026", 1), "x.yaml:10: model m: read"},
		{"bad source", strings.Replace(entry(""), "https://example.com/p", "somewhere", 1), "x.yaml:9: model m: source"},
		{"bad scheme", strings.Replace(entry(""), "scheme: anthropic", "scheme: google", 1), "x.yaml:3: model m: scheme"},
		{"twice", entry(strings.Replace(strings.TrimPrefix(entry(""), "models:\n"), "  m:\n", "  n:\n    aliases: [m]\n", 1)), "x.yaml:11: model id \"m\" priced twice"},
		{"openai with writes", strings.Replace(entry(""), "scheme: anthropic", "scheme: openai", 1), "x.yaml:6: model m: cache_write_5m is an Anthropic price"},
		{"bad max", entry("    max_prompt_tokens: lots\n"), "x.yaml:11: model m: max_prompt_tokens"},
		{"not a mapping", "models: [a, b]\n", "x.yaml:1: models: want a mapping"},
		{"syntax", "models:\n  m: [\n", "x.yaml: yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func ExampleCost() {
	u := &chat.Usage{Uncached: i64(50), CachedRead: i64(100000), CacheWrite: i64(1200),
		CacheWrite5m: i64(200), CacheWrite1h: i64(1000), Generated: i64(1)}
	usd, ok := Cost("claude-opus-4-5", u)
	fmt.Printf("%.6f %v\n", usd, ok)
	// Output: 0.061525 true
}
