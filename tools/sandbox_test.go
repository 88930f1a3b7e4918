package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/hygiene"
	"lab/tools"
)

// Tool paths that leave the workspace — "..", an absolute path outside, "~" outside the
// project, a link to a file or a folder outside, a link to nothing — are refused with the
// absolute path named (spec 3.2.0 §1, §11), and nothing outside is read or written.
func TestSandboxRefusesEscapes(t *testing.T) {
	t.Parallel()
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n")
	outside := filepath.Join(filepath.Dir(ws.Root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("SECRET\n"), 0o644)
	os.Symlink(secret, filepath.Join(ws.Root, "link.txt"))
	os.Symlink(outside, filepath.Join(ws.Root, "linkdir"))
	os.Symlink(filepath.Join(outside, "nothing-yet.txt"), filepath.Join(ws.Root, "dangling.txt"))
	for _, tc := range []struct {
		tool, args string
		// want is what the refusal must name: the absolute path.
		want string
	}{
		{"read", `{"path":"../outside/secret.txt"}`, secret + " is outside the project"},
		{"read", `{"path":"` + secret + `"}`, secret + " is outside the project"},
		{"read", `{"path":"/etc/passwd"}`, "/etc/passwd is outside the project"},
		{"read", `{"path":"~/outside/secret.txt"}`, secret + " is outside the project"},
		{"read", `{"path":"link.txt"}`, filepath.Join(ws.Root, "link.txt") + " leads to " + secret},
		{"read", `{"path":"linkdir/secret.txt"}`, filepath.Join(ws.Root, "linkdir/secret.txt") + " leads to " + secret},
		{"list", `{"path":"linkdir"}`, filepath.Join(ws.Root, "linkdir") + " leads to " + outside},
		{"grep", `{"pattern":"SECRET","path":"linkdir"}`, "outside the project"},
		{"write", `{"path":"link.txt","content":"overwritten"}`, " leads to " + secret},
		{"write", `{"path":"linkdir/new.txt","content":"escaped"}`, filepath.Join(ws.Root, "linkdir/new.txt") + " leads to " + outside},
		{"write", `{"path":"linkdir/sub/new.txt","content":"escaped"}`, " leads to " + outside},
		{"write", `{"path":"dangling.txt","content":"escaped"}`, filepath.Join(ws.Root, "dangling.txt") + " is a link to nothing"},
		{"write", `{"path":"../outside/new.txt","content":"escaped"}`, filepath.Join(outside, "new.txt") + " is outside the project"},
		{"edit", `{"path":"link.txt","old_string":"SECRET","new_string":"gone"}`, " leads to " + secret},
		{"multiedit", `{"path":"link.txt","edits":[{"old_string":"SECRET","new_string":"gone"}]}`, " leads to " + secret},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: linkdir/p.txt\n+escaped\n*** End Patch"}`, " leads to " + outside},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../outside/moved.txt\n@@\n-x\n+y\n*** End Patch"}`, filepath.Join(outside, "moved.txt") + " is outside the project"},
	} {
		got := ws.Run(hs, tc.tool, []byte(tc.args))
		if !strings.Contains(got, "Error: ") || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s =\n%q\nwant a refusal naming %q", tc.tool, tc.args, got, tc.want)
		}
		if strings.Contains(got, "SECRET") {
			t.Errorf("%s %s showed the file outside: %q", tc.tool, tc.args, got)
		}
	}
	// Nothing outside changed, nothing was created there, and the project is as it was.
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Errorf("the file outside was changed: %q", b)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files outside: %v; want only secret.txt", entries)
	}
	fileIs(t, ws, "a.txt", "x\n")
	// A search of the whole project does not follow a link out.
	if got := ws.Run(hs, "grep", []byte(`{"pattern":"SECRET"}`)); strings.Contains(got, "SECRET") {
		t.Errorf("grep of the project = %q; it followed a link outside", got)
	}
}

// Files are bounded: a read or an edit of a file over MaxFileBytes, and a write or an edit whose
// content would be larger, are refused with the absolute path, and the file is unchanged.
func TestSandboxBoundsFileSizes(t *testing.T) {
	t.Parallel()
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n")
	big := filepath.Join(ws.Root, "big.log")
	if err := os.WriteFile(big, []byte(strings.Repeat("y", tools.MaxFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("z", tools.MaxFileBytes+1)
	for _, tc := range []struct{ tool, args, want string }{
		{"read", `{"path":"big.log"}`, "read " + big + ": the file is 10485761 bytes"},
		{"edit", `{"path":"big.log","old_string":"yy","new_string":"y"}`, "edit " + big + ": the file is 10485761 bytes"},
		{"write", `{"path":"new.txt","content":"` + huge + `"}`, "write " + filepath.Join(ws.Root, "new.txt") + ": the content would be 10485761 bytes"},
		{"edit", `{"path":"a.txt","old_string":"x","new_string":"` + huge + `"}`, "edit " + filepath.Join(ws.Root, "a.txt") + ": the content would be"},
		{"multiedit", `{"path":"a.txt","edits":[{"old_string":"x","new_string":"` + huge + `"}]}`, "multiedit " + filepath.Join(ws.Root, "a.txt") + ": the content would be"},
	} {
		got := ws.Run(hs, tc.tool, []byte(tc.args))
		if !strings.Contains(got, tc.want) || len(got) > 1000 {
			t.Errorf("%s: %.300q; want a short refusal holding %q", tc.tool, got, tc.want)
		}
	}
	fileIs(t, ws, "a.txt", "x\n")
	noFile(t, ws, "new.txt")
	// A search skips the file too large to read, and still answers.
	if got := ws.Run(hs, "grep", []byte(`{"pattern":"y"}`)); !strings.Contains(got, "No matches.") {
		t.Errorf("grep = %.200q; want no match (big.log is not searched)", got)
	}
}
