//go:build unix && !linux

package tools_test

// swapFolder returns a func that swaps the folder d for a link to where link leads, and back,
// with plain renames ([renameSwap]): where there is no renameat2(2), the folder is missing for a
// moment at each swap.
func swapFolder(d, link string) func() { return renameSwap(d, link) }
