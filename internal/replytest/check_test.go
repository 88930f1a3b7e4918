package replytest

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

// The check fails a backend whose error names the password, or that gives no error, once per
// bad answer; it passes one whose errors leave the password out.
func TestPasswordNotInErrorsCatchesALeak(t *testing.T) {
	leak := func(u string) error { return errors.New("post " + u + ": boom") }
	quiet := func(string) error { return errors.New("boom") }
	none := func(string) error { return nil }
	for name, tc := range map[string]struct {
		send func(string) error
		want int
	}{"leak": {leak, 3}, "quiet": {quiet, 0}, "no error": {none, 3}} {
		r := &recorder{TB: t}
		PasswordNotInErrors(r, "text/plain", "x", nil, tc.send)
		if len(r.failed) != tc.want {
			t.Errorf("%s: %d failures %q; want %d", name, len(r.failed), r.failed, tc.want)
		}
	}
	// route answers every request itself: send sees what route wrote, and the check runs all the same.
	var routed int
	r := &recorder{TB: t}
	PasswordNotInErrors(r, "text/plain", "x", func(w http.ResponseWriter, _ *http.Request) bool { routed++; return true }, func(u string) error {
		_, err := http.Get(u)
		if err == nil {
			err = errors.New("boom")
		}
		return err
	})
	if routed != 3 {
		t.Errorf("route saw %d requests; want 3", routed)
	}
}
