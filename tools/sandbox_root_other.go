//go:build !linux

package tools

// memoryTempDir is "" off Linux: a [PrivateSandbox] is made in the machine's temporary folder.
func memoryTempDir() string { return "" }
