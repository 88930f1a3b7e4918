package tools_test

import (
	"os"

	"golang.org/x/sys/unix"
)

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

// renameSwap swaps with plain renames: the folder put aside, the link put in its place, then
// the folder back (errors ignored, as the tools change the same names meanwhile).
func renameSwap(d, link string) func() {
	saved := d + ".saved"
	target, _ := os.Readlink(link)
	return func() {
		if err := os.Rename(d, saved); err != nil {
			os.RemoveAll(d)
		}
		os.Symlink(target, d)
		os.Remove(d)
		os.RemoveAll(d)
		os.Rename(saved, d)
	}
}
