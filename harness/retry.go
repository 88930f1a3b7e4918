package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"lab/chat"
)

// The defaults of [RetryPolicy].
const (
	// DefaultAttempts is how many times a request is sent at most: the first attempt and two
	// retries.
	DefaultAttempts = 3
	// DefaultBackoff is the wait before the first retry; each next wait doubles it.
	DefaultBackoff = time.Second
	// DefaultMaxWait caps one wait between attempts, a server's Retry-After included.
	DefaultMaxWait = time.Minute
	// DefaultRequestTimeout bounds one attempt of one request: sending it, the server's prefill
	// and the whole streamed answer; the generation emulation after it ([CacheFiller]) has a
	// bound of its own.
	DefaultRequestTimeout = 5 * time.Minute
)

// RetryPolicy says how often and after how long a request that failed with a retryable error
// ([Retryable]) is sent again. Its zero value is the default policy: 3 attempts, waits of 1 s
// then 2 s (or the server's Retry-After, up to 1 min), each attempt bounded by 5 min.
type RetryPolicy struct {
	// Attempts is the most times one request is sent, the first included; 0 means
	// [DefaultAttempts], 1 means no retry.
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next one; 0 means
	// [DefaultBackoff]. A server's Retry-After, when longer, is waited instead.
	Backoff time.Duration
	// MaxWait caps one wait; 0 means [DefaultMaxWait].
	MaxWait time.Duration
	// RequestTimeout bounds each attempt; 0 means [DefaultRequestTimeout], a negative value no
	// bound. An attempt that runs out of time is a retryable failure.
	RequestTimeout time.Duration
	// Sleep waits d or until ctx ends (returning ctx's error); nil waits with a timer. Tests
	// replace it to see the waits without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return DefaultAttempts
	}
	return p.Attempts
}

func (p RetryPolicy) timeout() time.Duration {
	if p.RequestTimeout == 0 {
		return DefaultRequestTimeout
	}
	return p.RequestTimeout
}

// wait is the pause before retry number n (1-based) after err: the backoff doubled n−1 times,
// or the server's Retry-After when longer, at most MaxWait.
func (p RetryPolicy) wait(n int, err error) time.Duration {
	base, limit := p.Backoff, p.MaxWait
	if base <= 0 {
		base = DefaultBackoff
	}
	if limit <= 0 {
		limit = DefaultMaxWait
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	var ae *chat.APIError
	if errors.As(err, &ae) && ae.RetryAfter > d {
		d = ae.RetryAfter
	}
	return min(d, limit)
}

func (p RetryPolicy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrRequestTimeout marks an attempt that did not end within [RetryPolicy].RequestTimeout.
var ErrRequestTimeout = errors.New("harness: request timed out")

// Retryable reports whether a request that failed with err may succeed when sent again: a
// connection refused or reset, a timeout ([ErrRequestTimeout], a network timeout), a stream cut
// short (an unexpected EOF, or an answer that ended before its end marker: [chat.CutError]),
// and a *chat.APIError with no HTTP status (no answer, or a transport error after the answer
// began) or with HTTP 408, 429 or 5xx. Not retryable: any other HTTP status (a 4xx: the request
// itself is wrong), a malformed answer, an HTTP 200 that is not the API's answer (an HTML page:
// [chat.NotAnswerError]), and a canceled context (the run was interrupted).
func Retryable(err error) bool {
	var fill *chat.CacheFillError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.As(err, &fill):
		return false
	case errors.Is(err, ErrRequestTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var ae *chat.APIError
	if errors.As(err, &ae) {
		switch s := ae.StatusCode; {
		case s == 0:
			// No HTTP status: a transport failure or an error the server reported inside its
			// stream, which are worth another try; not an answer the lab could not read, a
			// request it could not build, or a host that does not exist.
			for _, t := range []string{"invalid character", "cannot unmarshal", "not JSON", "rendered_template", "no such host", "unsupported protocol", "invalid_request"} {
				if strings.Contains(ae.Body, t) {
					return false
				}
			}
			return true
		case s == 408, s == 429, s >= 500:
			return true
		case s == 200:
			// The answer began, then the transport failed: a stream cut short. The backends
			// keep only the transport error's text. Or the answer ended before its end marker
			// (chat.CutError: "stream cut: no message_stop"). Or the server reported an
			// overload or a server error inside a stream it had begun.
			if strings.HasPrefix(ae.Body, chat.StreamCut+":") {
				return true
			}
			for _, t := range []string{"unexpected EOF", "connection reset", "overloaded", "server_error", "rate_limit", "api_error"} {
				if strings.Contains(ae.Body, t) {
					return true
				}
			}
			return false
		}
		return false
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.IsTimeout || de.IsTemporary
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// attempts is what sending one request took: how often it was sent again, how long the harness
// waited between attempts, the errors of the attempts that failed before the last, and whether
// its cache fill ([CacheFiller]) failed for good.
type attempts struct {
	retries    int
	wait       time.Duration
	notes      []string
	fillFailed bool
}

// send sends req through the backend, again after each retryable failure, as p says. Each
// attempt runs under p's request timeout. It returns the last attempt's result and error. For a
// [CacheFiller] only the measured request (Measure) is retried so; its cache fill is then retried
// on its own ([fill]), and a fill that fails for good is a note, not an error. A plain Backend's
// *chat.CacheFillError (its Send measured, then failed to fill) is such a note too, not retried.
func send(ctx context.Context, p RetryPolicy, be Backend, req *chat.Request, reply *chat.Reply) (*chat.Result, attempts, error) {
	var a attempts
	for n := 1; ; n++ {
		res, err := sendOnce(ctx, p, be, req, reply)
		if err == nil {
			if cf, ok := be.(CacheFiller); ok {
				err = fill(ctx, p, cf, req, reply, res, &a)
			}
			return res, a, err
		}
		var fe *chat.CacheFillError
		if errors.As(err, &fe) && res != nil && ctx.Err() == nil {
			// A Send that measured and then failed to fill the cache: the measurement stands.
			fillFailed(res, &a, n, fe.Err)
			return res, a, nil
		}
		if ctx.Err() != nil || n >= p.attempts() || !Retryable(err) {
			return res, a, err
		}
		d := p.wait(n, err)
		a.notes = append(a.notes, fmt.Sprintf("attempt %d failed (%v); sent again after %s", n, err, d))
		if serr := p.sleep(ctx, d); serr != nil {
			return res, a, err
		}
		a.retries++
		a.wait += d
	}
}

// WarningFillFailed starts the warning of a row whose cache fill ([CacheFiller]) failed for good:
// the row keeps its measurement, and the server's cache holds the measured prompt without the
// reply.
const WarningFillFailed = "cache fill failed"

// WarningAfterFailedFill starts the warning of the row after one whose cache fill failed: what it
// re-read of the previous reply is the failed fill's, not the rendering's.
const WarningAfterFailedFill = "after a failed cache fill"

// fill runs cf's cache fill after the measured request res, again after each retryable failure
// as p says (the measured request is not sent again: its result is kept), noting each failed
// attempt in a. A fill that fails for good is noted ([WarningFillFailed]), res.CacheText is
// emptied (the cache holds the prompt as rendered) and a.fillFailed set; fill then returns nil.
// Only the end of ctx (the run interrupted) is an error.
func fill(ctx context.Context, p RetryPolicy, cf CacheFiller, req *chat.Request, reply *chat.Reply, res *chat.Result, a *attempts) error {
	for n := 1; ; n++ {
		err := func() error {
			t := p.timeout()
			if t < 0 {
				return cf.FillCache(ctx, req, reply, res)
			}
			actx, cancel := context.WithTimeoutCause(ctx, t, ErrRequestTimeout)
			defer cancel()
			err := cf.FillCache(actx, req, reply, res)
			if err != nil && ctx.Err() == nil && actx.Err() != nil {
				err = fmt.Errorf("%w: no answer within %s (--request-timeout): %w", ErrRequestTimeout, t, err)
			}
			return err
		}()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if n < p.attempts() && Retryable(err) {
			d := p.wait(n, err)
			a.notes = append(a.notes, fmt.Sprintf("cache fill attempt %d failed (%v); filled again after %s, the measured request kept", n, err, d))
			if serr := p.sleep(ctx, d); serr != nil {
				return serr
			}
			continue
		}
		fillFailed(res, a, n, err)
		return nil
	}
}

// fillFailed records in a that the cache fill after res failed for good after n attempts with
// err: the note, and res.CacheText emptied (the server's cache holds the prompt as rendered).
func fillFailed(res *chat.Result, a *attempts, n int, err error) {
	res.CacheText = ""
	a.fillFailed = true
	a.notes = append(a.notes, fmt.Sprintf("%s after %d attempts (%v): the row keeps its measurement; the server's cache holds the prompt without the reply, and the next request's expected cached tokens count from it", WarningFillFailed, n, err))
}

// sendOnce is one attempt under p's request timeout: Send, or Measure for a [CacheFiller]. A
// timeout of the attempt (not of ctx) is reported as [ErrRequestTimeout].
func sendOnce(ctx context.Context, p RetryPolicy, be Backend, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	do := be.Send
	if cf, ok := be.(CacheFiller); ok {
		do = cf.Measure
	}
	t := p.timeout()
	if t < 0 {
		return do(ctx, req, reply)
	}
	actx, cancel := context.WithTimeoutCause(ctx, t, ErrRequestTimeout)
	defer cancel()
	res, err := do(actx, req, reply)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		err = fmt.Errorf("%w: no complete answer within %s (--request-timeout): %w", ErrRequestTimeout, t, err)
	}
	return res, err
}

// retryDo runs fn as [send] runs a request: again after each retryable failure, each attempt
// under p's request timeout. For the requests that are not measured (a cache reset).
func retryDo(ctx context.Context, p RetryPolicy, fn func(context.Context) error) error {
	for n := 1; ; n++ {
		err := func() error {
			t := p.timeout()
			if t < 0 {
				return fn(ctx)
			}
			actx, cancel := context.WithTimeoutCause(ctx, t, ErrRequestTimeout)
			defer cancel()
			err := fn(actx)
			if err != nil && ctx.Err() == nil && actx.Err() != nil {
				err = fmt.Errorf("%w: no answer within %s: %w", ErrRequestTimeout, t, err)
			}
			return err
		}()
		if err == nil || ctx.Err() != nil || n >= p.attempts() || !Retryable(err) {
			return err
		}
		if serr := p.sleep(ctx, p.wait(n, err)); serr != nil {
			return err
		}
	}
}
