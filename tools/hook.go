package tools

import "context"

// SetReadHook is for tests: it makes f run before each folder and each file chunk a tool reads, with the tool
// call's context (a slow disk), until the returned function puts the old hook back.
func SetReadHook(f func(ctx context.Context)) (restore func()) {
	old := readHook
	readHook = f
	return func() { readHook = old }
}
