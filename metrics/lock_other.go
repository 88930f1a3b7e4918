//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package metrics

import (
	"errors"
	"os"
)

// tryLock takes no lock where flock does not exist: it returns an error saying so, and callers
// go on without one.
func tryLock(*os.File, bool) (bool, error) {
	return false, errors.New("no advisory file locks on this system")
}
