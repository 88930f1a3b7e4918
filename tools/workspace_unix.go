//go:build unix

package tools

import "syscall"

// openNoBlock is added to the flags of every file the tools open: opening a named pipe then
// returns at once instead of waiting for the other end (spec-free safety: a tool never hangs), and
// the opened file's type is checked before anything is read or written.
const openNoBlock = syscall.O_NONBLOCK
