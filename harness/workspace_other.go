//go:build !unix

package harness

// openNoBlock: without O_NONBLOCK the tools rely on the type check made before each open.
const openNoBlock = 0
