package report

import (
	"fmt"
	"strings"

	"lab/metrics"
)

// WarmStarts is what the first requests of warm runs' sessions (lab run --warm, manifest
// cache_state warm) found in the server's cache: a warm run resets nothing, so a session's first
// request may be served from an earlier session's cache, and a practice that changes the first
// request between sessions (the tool order, the date line) shows its cost there. All counts are
// over the complete sessions of the warm runs analysed; tokens are the server's count.
type WarmStarts struct {
	// Sessions is the number of sessions of warm runs: their first requests (request index 0).
	Sessions int `json:"sessions"`
	// Served is the number of those first requests the server answered with more than 0 cached
	// tokens: served from an earlier session's cache (for a run's first session, from whatever
	// the server held before the run).
	Served int `json:"served"`
	// CachedTokens is the cached tokens of the first requests, summed (those of Served).
	CachedTokens int64 `json:"cached_tokens"`
	// CachedUnknown is the number of first requests with no cached count (left out of Served and
	// CachedTokens).
	CachedUnknown int `json:"cached_unknown"`
	// ExpectedCachedTokens is the lab's expected cached tokens of the first requests whose
	// expected count is known, summed; ExpectedUnknown is the number whose expected count is
	// null (what the server held when the session started was unknown: sessions at once, a
	// resumed run, the first session on a server the lab did not make; or no rendering).
	// ExpectedCachedTokens is nil (JSON null) when no first request's expected count is known.
	ExpectedCachedTokens *int64 `json:"expected_cached_tokens"`
	ExpectedUnknown      int    `json:"expected_unknown"`
}

// warmStarts returns the first requests' figures of the rows of runs whose manifest says
// cache_state warm; nil when no run is warm.
func warmStarts(rows *metrics.Rows, runs []*metrics.Manifest) *WarmStarts {
	warm := map[string]bool{}
	for _, m := range runs {
		if m != nil && m.CacheState == metrics.CacheWarm {
			warm[m.RunID] = true
		}
	}
	if len(warm) == 0 {
		return nil
	}
	w := &WarmStarts{}
	for i, s := range rows.All() {
		if rows.RequestIndex(i) != 0 || !warm[rows.RunID(i)] {
			continue
		}
		w.Sessions++
		switch c, ok := metrics.Int64(s.CachedTokens); {
		case !ok:
			w.CachedUnknown++
		case c > 0:
			w.Served++
			w.CachedTokens += c
		}
		if e, ok := metrics.Int64(s.ExpectedCachedTokens); ok {
			if w.ExpectedCachedTokens == nil {
				w.ExpectedCachedTokens = new(int64)
			}
			*w.ExpectedCachedTokens += e
		} else {
			w.ExpectedUnknown++
		}
	}
	return w
}

// line is the report's sentence of w.
func (w *WarmStarts) line() string {
	var b strings.Builder
	whose := "sessions' first requests were"
	if w.Sessions == 1 {
		whose = "session's first request was"
	}
	fmt.Fprintf(&b, "Warm starts (lab run --warm: no reset between sessions): %d of %d %s served from an earlier session's cache, %s cached tokens in all",
		w.Served, w.Sessions, whose, thousands(w.CachedTokens))
	if w.CachedUnknown > 0 {
		fmt.Fprintf(&b, " (%d with no cached count)", w.CachedUnknown)
	}
	if w.ExpectedCachedTokens != nil {
		fmt.Fprintf(&b, "; the lab expected %s over the %d whose start it knew", thousands(*w.ExpectedCachedTokens), w.Sessions-w.ExpectedUnknown)
	} else {
		b.WriteString("; the lab knew none of their starts")
	}
	if w.ExpectedUnknown > 0 {
		fmt.Fprintf(&b, " (%d unknown: what the server held when the session started, see the rows' warnings)", w.ExpectedUnknown)
	}
	b.WriteString(".")
	return b.String()
}
