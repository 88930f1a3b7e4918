package tools_test

import "golang.org/x/sys/unix"

// swapFolder returns a func that swaps the folder d for the link link (and back at the next
// call) in one step, with renameat2(2)'s RENAME_EXCHANGE: d is always either the folder or the
// link, never missing, so a tool finds the folder at a check as often as the link at an open.
// Where the filesystem has no exchange it falls back to [renameSwap].
func swapFolder(d, link string) func() {
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		return renameSwap(d, link)
	}
	return func() { unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) }
}
