package chat

import "testing"

func TestUsageSet(t *testing.T) {
	var u Usage
	one, two := int64(1), int64(2)
	u.Set("CachedRead", "timings.cache_n", nil) // unknown: left unset
	u.Set("CachedRead", "usage.prompt_tokens_details.cached_tokens", &one)
	u.Set("CachedRead", "timings.cache_n", &two) // the first source wins
	one = 9                                      // the figure is a copy
	if u.CachedRead == nil || *u.CachedRead != 1 || u.Fields["CachedRead"] != "usage.prompt_tokens_details.cached_tokens" || len(u.Fields) != 1 {
		t.Errorf("CachedRead %v, fields %v", u.CachedRead, u.Fields)
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown field did not panic")
		}
	}()
	u.Set("Cached", "x", &two)
}
