package chat

import (
	"encoding/json"
	"testing"
)

func TestUsageSet(t *testing.T) {
	var u Usage
	one, two := int64(1), int64(2)
	u.Set(UsageCachedRead, "timings.cache_n", nil) // unknown: left unset
	u.Set(UsageCachedRead, "usage.prompt_tokens_details.cached_tokens", &one)
	u.Set(UsageCachedRead, "timings.cache_n", &two) // the first source wins
	one = 9                                         // the figure is a copy
	if u.CachedRead == nil || *u.CachedRead != 1 || u.Fields[UsageCachedRead] != "usage.prompt_tokens_details.cached_tokens" || len(u.Fields) != 1 {
		t.Errorf("CachedRead %v, fields %v", u.CachedRead, u.Fields)
	}
	// A value outside the constants names no figure: nothing is recorded, nothing panics.
	u.Set(UsageField(200), "x", &two)
	if len(u.Fields) != 1 || u.Get(UsageField(200)) != nil {
		t.Errorf("an invalid field was recorded: %v", u.Fields)
	}
}

// Every figure: Set fills the Usage field of the same name, Get reads it back, and the name
// round-trips through String and ParseUsageField.
func TestUsageFieldEvery(t *testing.T) {
	fields := UsageFields()
	if len(fields) != 8 {
		t.Fatalf("%d usage fields, want 8", len(fields))
	}
	for i, f := range fields {
		var u Usage
		v := int64(100 + i)
		u.Set(f, "wire."+f.String(), &v)
		byName := map[string]*int64{
			"Prompt": u.Prompt, "CachedRead": u.CachedRead, "CacheWrite": u.CacheWrite, "CacheWrite5m": u.CacheWrite5m,
			"CacheWrite1h": u.CacheWrite1h, "Uncached": u.Uncached, "Generated": u.Generated, "ReasoningGenerated": u.ReasoningGenerated,
		}
		for name, p := range byName {
			if (name == f.String()) != (p != nil) {
				t.Errorf("Set(%v) filled %s = %v", f, name, p)
			}
		}
		if got := u.Get(f); got == nil || *got != v {
			t.Errorf("Get(%v) = %v; want %d", f, got, v)
		}
		back, err := ParseUsageField(f.String())
		if err != nil || back != f {
			t.Errorf("ParseUsageField(%q) = %v, %v; want %v", f.String(), back, err, f)
		}
		if w := u.Without(f); w.Get(f) != nil || len(w.Fields) != 0 || u.Get(f) == nil || len(u.Fields) != 1 {
			t.Errorf("Without(%v) = %+v; the original now %+v", f, w, u)
		}
	}
	if _, err := ParseUsageField("Cached"); err == nil {
		t.Error("ParseUsageField(\"Cached\") gave no error")
	}
	if s := UsageField(200).String(); s != "UsageField(200)" {
		t.Errorf("String of an invalid field = %q", s)
	}
}

// The usage_fields column is Fields as JSON: an object keyed by the figures' names, sorted by
// name (not by the constants' order), and it decodes back.
func TestUsageFieldsJSON(t *testing.T) {
	var u Usage
	n := int64(1)
	for _, f := range []UsageField{UsageUncached, UsagePrompt, UsageCachedRead, UsageGenerated} {
		u.Set(f, "w"+f.String(), &n)
	}
	b, err := json.Marshal(u.Fields)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"CachedRead":"wCachedRead","Generated":"wGenerated","Prompt":"wPrompt","Uncached":"wUncached"}`; string(b) != want {
		t.Errorf("JSON %s; want %s", b, want)
	}
	var back map[UsageField]string
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 4 || back[UsageUncached] != "wUncached" {
		t.Errorf("decoded %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"Cached":"x"}`), &back); err == nil {
		t.Error("an unknown field name decoded")
	}
	if _, err := json.Marshal(map[UsageField]string{UsageField(200): "x"}); err == nil {
		t.Error("an invalid field encoded")
	}
}
