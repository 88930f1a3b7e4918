//go:build !unix

package localserver

import (
	"context"
	"io"
)

// Lock is a no-op where flock(2) does not exist: runs sharing a server are not kept apart.
func (s *Server) Lock(ctx context.Context, log io.Writer) (unlock func(), err error) {
	return func() {}, nil
}

// LockUse is a no-op where flock(2) does not exist: runs sharing a server are not kept apart.
func LockUse(ctx context.Context, path, url string, log io.Writer) (unlock func(), err error) {
	return func() {}, nil
}
