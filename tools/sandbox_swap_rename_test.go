//go:build unix

package tools_test

import "os"

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
