package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/metrics"
)

// Markdown writes report.md to w: a title with the run id, the manifest's facts (lab version,
// backend, server, model, num_ctx, start, end, whether the run completed), what the columns mean,
// then per scenario its table and links to its plots.
//
// plotFiles maps a scenario's name to the paths of its plot files, relative to the folder
// report.md is in (for example "plots/midnight-cached-share.svg"); they are linked in the given
// order, and a scenario without an entry gets no plot line. Numbers are formatted for people:
// thousands separators in token counts, seconds with 2 decimals, percentages with 1. It returns
// an error for a nil manifest and any error writing to w (one Write call).
func Markdown(w io.Writer, m *metrics.Manifest, tables []ScenarioTable, plotFiles map[string][]string) error {
	if m == nil {
		return errors.New("write markdown report: nil manifest")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Run %s\n\n", orDash(m.RunID))

	fmt.Fprintf(&b, "- Lab version: %s\n", orDash(m.LabVersion))
	fmt.Fprintf(&b, "- Backend: %s, server version %s", orDash(m.Backend), orDash(m.ServerVersion))
	if m.ServerURL != "" {
		fmt.Fprintf(&b, ", at %s", m.ServerURL)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- Model: %s, num_ctx %s\n", orDash(m.Model), numCtx(m.NumCtx))
	fmt.Fprintf(&b, "- Started: %s; ended: %s", timestamp(m.StartedAt), timestamp(m.EndedAt))
	if !m.StartedAt.IsZero() && !m.EndedAt.IsZero() {
		fmt.Fprintf(&b, " (%s)", m.EndedAt.Sub(m.StartedAt).Round(time.Second))
	}
	b.WriteString("\n")
	if m.Complete {
		b.WriteString("- Complete: yes\n")
	} else {
		b.WriteString("- Complete: **no**")
		if m.Error != "" {
			fmt.Fprintf(&b, ", error: %s", inline(m.Error))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- Scenarios: %s; arms: %s; repetitions: %d; samples: %s\n",
		orDash(strings.Join(m.Scenarios, ", ")), orDash(strings.Join(m.Arms, ", ")), m.Repetitions, thousands(int64(m.Samples)))
	if len(m.Settings) > 0 {
		keys := make([]string, 0, len(m.Settings))
		for k := range m.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, "`"+k+"="+m.Settings[k]+"`")
		}
		fmt.Fprintf(&b, "- Settings: %s\n", strings.Join(parts, ", "))
	}

	b.WriteString("\nColumns, summed over every request (and repetition) of an arm: *cached* is what the " +
		"server reports it reused from its cache, over the requests whose count is known; *expected* is " +
		"what a perfect prefix cache could have reused; *re-read* is what the server processed again; " +
		"*cache efficiency* is cached / expected over the requests whose cached count is known; " +
		"*re-read vs spec* is the arm's re-read tokens divided by the spec arm's.\n")

	if len(tables) == 0 {
		b.WriteString("\nNo samples.\n")
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "\n## %s\n\n", inline(t.Scenario))
		b.WriteString("| arm | requests | prompt tokens | cached tokens | expected cached tokens | re-read tokens | prefill (s) | cache efficiency | re-read vs spec |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range t.Rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				cell(r.Arm), thousands(int64(r.Requests)), thousands(r.PromptTokens), cachedCell(&r),
				thousands(r.ExpectedCachedTokens), thousands(r.RereadTokens), seconds(r.PrefillSeconds()),
				percent(r.Efficiency), ratio(r.RereadVsSpec))
		}
		var failed []string
		for _, r := range t.Rows {
			if r.Failed > 0 {
				failed = append(failed, fmt.Sprintf("%s %s of %s", inline(r.Arm), thousands(int64(r.Failed)), thousands(int64(r.Requests))))
			}
		}
		if len(failed) > 0 {
			fmt.Fprintf(&b, "\nFailed requests: %s.\n", strings.Join(failed, ", "))
		}
		if len(t.Mismatches) > 0 {
			fmt.Fprintf(&b, "\nRequests where the server reused more or less than expected (beyond %.0f %%):\n\n", 100*MismatchTolerance)
			for _, m := range t.Mismatches {
				why := "the server's cache held less than the previous request left (eviction, a reload or a bug)"
				switch {
				case m.LoadNs > 1e8:
					why = fmt.Sprintf("the model was loaded again (load %s s), which drops the cache", seconds(float64(m.LoadNs)/1e9))
				case m.CachedTokens > m.ExpectedCachedTokens:
					why = "the server reused more than the lab expected: the lab's rendering or tokenization differs from the server's"
				}
				fmt.Fprintf(&b, "- %s, repetition %d, request %d: cached %s, expected %s, first divergence in %s: %s\n",
					inline(m.Arm), m.Repetition, m.RequestIndex, thousands(m.CachedTokens), thousands(m.ExpectedCachedTokens), orDash(m.DivergenceSegment), why)
			}
		}
		if files := plotFiles[t.Scenario]; len(files) > 0 {
			links := make([]string, len(files))
			for i, f := range files {
				links[i] = fmt.Sprintf("[%s](%s)", inline(path.Base(f)), (&url.URL{Path: f}).EscapedPath())
			}
			fmt.Fprintf(&b, "\nPlots: %s\n", strings.Join(links, ", "))
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}

// cachedCell formats the cached tokens of r, saying how many requests had no count.
func cachedCell(r *ArmRow) string {
	switch {
	case r.Requests > 0 && r.CachedUnknown == r.Requests:
		return fmt.Sprintf("— (%s unknown)", thousands(int64(r.CachedUnknown)))
	case r.CachedUnknown > 0:
		return fmt.Sprintf("%s (%s unknown)", thousands(r.CachedTokens), thousands(int64(r.CachedUnknown)))
	default:
		return thousands(r.CachedTokens)
	}
}

// thousands formats n with a comma every three digits: 16912 → "16,912".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// seconds formats v with 2 decimals and thousands separators: 1234.5 → "1,234.50".
func seconds(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return s
	}
	if n == 0 && strings.HasPrefix(whole, "-") {
		return s // -0.xx
	}
	return thousands(n) + "." + frac
}

// percent formats a ratio as a percentage with 1 decimal (0.987 → "98.7%"); "—" for nil.
func percent(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(100**v, 'f', 1, 64) + "%"
}

// ratio formats v with 2 decimals and a times sign (0.81 → "0.81×"); "—" for nil.
func ratio(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64) + "×"
}

// numCtx formats a context size in tokens; "—" for 0 (none pinned).
func numCtx(n int) string {
	if n == 0 {
		return "—"
	}
	return thousands(int64(n))
}

// timestamp formats t in UTC to the second; "—" for the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return inline(s)
}

// inline makes s safe on one line of Markdown: line ends become spaces.
func inline(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(inline(s), "|", `\|`)
}
