package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"lab/metrics"
)

// The values of lab run's --progress.
const (
	// progressAuto is a progress bar on a terminal, else one line per session.
	progressAuto = "auto"
	// progressSessions is one line per session, also on a terminal.
	progressSessions = "sessions"
	// progressRequests is one line per request, also on a terminal.
	progressRequests = "requests"
)

// progressModes are --progress's values, in the order its help names them.
var progressModes = []string{progressAuto, progressSessions, progressRequests}

// progress shows a run's progress on w, for total requests: the run configuration's Progress
// (after each request) and SessionDone (after each session). In mode progressAuto it draws a
// bar on a terminal and writes one line per session elsewhere (logs, CI); a request that failed
// is always written on a line of its own. Its time left is shown only once a session has ended:
// before that the rate holds the server's start and the first cold prefill, and a first
// estimate from them can be many times the run's length.
type progress struct {
	w     io.Writer
	total int
	lines string // progressSessions or progressRequests; "" draws the bar
	bar   *progressbar.ProgressBar
	width int
	start time.Time
	// lastEnd is when the last session ended (start before the first); ended counts the
	// sessions that ended, done the requests.
	lastEnd time.Time
	ended   int
	done    int
	// sessions are the figures of the sessions running, by session.
	sessions map[sessionKey]*sessionFigures
}

type sessionKey struct {
	scenario, arm string
	rep           int
}

// sessionFigures add up one session's requests for its progress line.
type sessionFigures struct {
	start                  time.Time
	requests               int
	cached, promptOfCached int64
}

// newProgress returns the progress display for total requests on w in mode (progressModes; ""
// is progressAuto).
func newProgress(w io.Writer, total int, mode string) *progress {
	now := time.Now()
	p := &progress{w: w, total: total, start: now, lastEnd: now, sessions: map[sessionKey]*sessionFigures{}, lines: mode}
	if mode == "" || mode == progressAuto {
		p.lines = progressSessions
		if isTerminal(w) {
			p.lines = ""
			p.width = 80
			if f, ok := w.(*os.File); ok {
				if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
					p.width = cols
				}
			}
			p.bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetWidth(24),
				progressbar.OptionShowCount(),
				progressbar.OptionSetItsString("requests"),
				progressbar.OptionShowIts(),
				progressbar.OptionSetPredictTime(false), // the description says the time left (eta)
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
			)
		}
	}
	return p
}

// requestLine is one request: "midnight/spec request 3: 4978 prompt tokens, 97% cached, prefill
// 0.15s"; a figure not measured (null in the row) reads "?".
func requestLine(s *metrics.Sample) string {
	cached := "?"
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		cached = fmt.Sprintf("%.0f%%", 100*float64(*s.CachedTokens)/float64(s.PromptTokens))
	}
	// 0 prompt tokens or prefill time: not measured (null in the row), shown as "?".
	prompt, prefill := "?", "?"
	if s.PromptTokens > 0 {
		prompt = strconv.FormatInt(s.PromptTokens, 10)
	}
	if s.PrefillNs > 0 {
		prefill = fmt.Sprintf("%.2f", float64(s.PrefillNs)/1e9)
	}
	l := fmt.Sprintf("%s/%s request %d: %s prompt tokens, %s cached, prefill %ss",
		s.Scenario, s.Arm, s.RequestIndex, prompt, cached, prefill)
	if s.Error != "" {
		l += " error: " + s.Error
	}
	return l
}

// eta is the time left, from the rate of the requests so far; "" until a session has ended.
func (p *progress) eta(now time.Time) string {
	if p.ended == 0 || p.done == 0 || p.done >= p.total {
		return ""
	}
	left := now.Sub(p.start) / time.Duration(p.done) * time.Duration(p.total-p.done)
	if left < time.Second {
		return "<1s"
	}
	return left.Round(time.Second).String()
}

// Request is [harness.RunConfig].Progress: done of total requests, s the one just measured.
func (p *progress) Request(done, _ int, s *metrics.Sample) {
	p.done = done
	k := sessionKey{s.Scenario, s.Arm, int(s.Repetition)}
	f := p.sessions[k]
	if f == nil {
		f = &sessionFigures{start: p.lastEnd}
		p.sessions[k] = f
	}
	f.requests++
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		f.cached += *s.CachedTokens
		f.promptOfCached += s.PromptTokens
	}
	switch {
	case p.lines == progressRequests:
		eta := ""
		if e := p.eta(time.Now()); e != "" {
			eta = " eta " + e
		}
		fmt.Fprintf(p.w, "[%d/%d] %s%s\n", done, p.total, requestLine(s), eta)
		return
	case p.lines != "":
		if s.Error != "" {
			fmt.Fprintf(p.w, "[%d/%d] %s\n", done, p.total, requestLine(s))
		}
		return
	}
	if s.Error != "" {
		p.bar.Clear()
		fmt.Fprintf(p.w, "[%d/%d] %s\n", done, p.total, requestLine(s))
	}
	desc := fmt.Sprintf("%s/%s", s.Scenario, s.Arm)
	if s.Repetition > 1 {
		desc += fmt.Sprintf(" #%d", s.Repetition)
	}
	desc += fmt.Sprintf(" request %d", s.RequestIndex)
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		desc += fmt.Sprintf(", %.0f%% cached", 100*float64(*s.CachedTokens)/float64(s.PromptTokens))
	}
	if e := p.eta(time.Now()); e != "" {
		desc = "eta " + e + " " + desc // first: a narrow terminal cuts the end
	}
	// The bar, the count and the rate take about 50 columns; the description gets the rest,
	// so a line never wraps (a wrapped line leaves a stale copy at every redraw).
	if n := p.width - 52; len(desc) > n {
		desc = desc[:max(n-1, 0)] + "…"
	}
	p.bar.Describe(desc)
	if done > p.bar.GetMax() { // a scenario sent more requests than planned
		p.bar.ChangeMax(done)
	}
	p.bar.Set(done)
}

// Session is [harness.RunConfig].SessionDone: off the bar, one line per session ended:
// "[48/96] midnight/spec repetition 1: 48 requests, 93.5% cached, 4m2.2s (run 4m2.2s, eta 4m2s)".
func (p *progress) Session(rec metrics.SessionRecord) {
	now := time.Now()
	k := sessionKey{rec.Scenario, rec.Arm, rec.Repetition}
	f := p.sessions[k]
	delete(p.sessions, k)
	p.ended++
	p.lastEnd = now
	if p.lines != progressSessions {
		return
	}
	if f == nil {
		f = &sessionFigures{start: now}
	}
	cached := "— cached" // no request's cached tokens known
	if f.promptOfCached > 0 {
		cached = fmt.Sprintf("%.1f%% cached", 100*float64(f.cached)/float64(f.promptOfCached))
	}
	run := "run " + now.Sub(p.start).Round(100*time.Millisecond).String()
	if e := p.eta(now); e != "" {
		run += ", eta " + e
	}
	end := ""
	if !rec.Complete {
		end = ", failed: " + rec.Error
	}
	fmt.Fprintf(p.w, "[%d/%d] %s/%s repetition %d: %d %s, %s, %s (%s)%s\n", p.done, p.total, rec.Scenario, rec.Arm, rec.Repetition,
		rec.Requests, plural(rec.Requests, "request", "requests"), cached, now.Sub(f.start).Round(100*time.Millisecond), run, end)
}

// isTerminal reports whether w is a terminal, where the progress bar can redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
