//go:build !unix

package tools

// openNoBlock: without O_NONBLOCK the tools rely on the type check made before each open.
const openNoBlock = 0
