package report

import "testing"

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, got, want string
	}{
		{"zero", thousands(0), "0"},
		{"three digits", thousands(999), "999"},
		{"four digits", thousands(16912), "16,912"},
		{"seven digits", thousands(1234567), "1,234,567"},
		{"negative", thousands(-1234567), "-1,234,567"},
		{"seconds", seconds(139.2049), "139.20"},
		{"seconds thousands", seconds(1234.567), "1,234.57"},
		{"seconds zero", seconds(0), "0.00"},
		{"seconds negative fraction", seconds(-0.5), "-0.50"},
		{"percent", percent(new(0.9876)), "98.8%"},
		{"percent nil", percent(nil), "—"},
		{"ratio", ratio(new(2460.0 / 2010)), "1.22×"},
		{"ratio nil", ratio(nil), "—"},
		{"cell pipe", cell("a|b\nc"), `a\|b c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.got != tc.want {
				t.Errorf("got %q; want %q", tc.got, tc.want)
			}
		})
	}
}

// A request whose prompt only extended the server's cache (no divergence token, expected cached
// tokens known) is said to have diverged nowhere; one the lab could not model stays unknown.
func TestSideWithoutDivergence(t *testing.T) {
	n := int64(2485)
	extended := RequestSide{ExpectedCachedTokens: &n, CachedTokens: &n}
	if got := divergedAt(extended); got != "none (—)" {
		t.Errorf("divergedAt(prompt extended the cache) = %q; want none (—)", got)
	}
	if got := divergedIn(extended); got != "nothing diverged (the prompt extended the cache)" {
		t.Errorf("divergedIn(prompt extended the cache) = %q", got)
	}
	unknown := RequestSide{CachedTokens: &n}
	if got := divergedAt(unknown); got != "token unknown (—)" {
		t.Errorf("divergedAt(expected unknown) = %q; want token unknown (—)", got)
	}
	if got := divergedIn(unknown); got != "no divergence recorded" {
		t.Errorf("divergedIn(expected unknown) = %q", got)
	}
}
