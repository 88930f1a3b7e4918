package hygiene

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// ChangeKind is what a change did to a file (§5).
type ChangeKind int

const (
	// Updated is a change to an existing file: its answer is the unified diff.
	Updated ChangeKind = iota
	// Created is a new file: its answer is "Created, N lines.".
	Created
	// Deleted is a file removed: its answer is "[path deleted]".
	Deleted
)

// FileChange is one file's change in an edit, a write or an apply_patch (§5).
type FileChange struct {
	// Path is the path as the call gave it; the bracket names it (§1).
	Path string
	// Kind is what the change did.
	Kind ChangeKind
	// Content is the file's new content (Updated, Created); its SHA-256 goes in the bracket.
	Content []byte
	// Diff is the unified diff of the change, three lines of context, hunks only (Updated).
	Diff string
}

// Edited answers an edit, a multiedit or a write over an existing file (§5): a bracket naming the
// path as the call gave it and the first sha_digits hex digits of the new content's SHA-256, then
// the unified diff (hunks only) — "[#0022 src/app.ts sha 7d0a91c3]\n@@ -12,3 +12,3 @@…". The diff
// is capped like any output, its first line kept (§3, [Config.CapText]); the stored text is the
// whole diff. An empty diff leaves the bracket alone. With §5 off the answer is the plain
// confirmation "Edited PATH." (with ids on, under "[#id]"); with ids off and §5 on, the bracket
// has no id and the diff is not capped.
func (s *Session) Edited(path string, newContent []byte, diff string) string {
	return s.Patched([]FileChange{{Path: path, Kind: Updated, Content: newContent, Diff: diff}})
}

// Created answers a write of a new file (§5): "[#0023 docs/new.md sha 52b6e3a0] Created, 14
// lines." — the new content's hash and its length in lines, counted as the read tool counts them
// ([Lines]). With §5 off: "Created PATH.".
func (s *Session) Created(path string, content []byte) string {
	return s.Patched([]FileChange{{Path: path, Kind: Created, Content: content}})
}

// Deleted answers a file deleted (§5): "[#0024 old.md deleted]". With §5 off: "Deleted PATH.".
func (s *Session) Deleted(path string) string {
	return s.Patched([]FileChange{{Path: path, Kind: Deleted}})
}

// Patched answers an apply_patch (§5). One change answers as [Session.Edited], [Session.Created]
// or [Session.Deleted] would. Several answer the id alone, "[#0025]", then each file in its own
// bracket with its change, in the patch's order:
//
//	[#0025]
//	[src/a.ts sha 7d0a91c3]
//	@@ -1,2 +1,2 @@
//	[docs/new.md sha 52b6e3a0] Created, 14 lines.
//	[old.md deleted]
//
// The cap (§3) applies once to everything after the id line, so the answer stays within the cap's
// limits however many files the patch touches; its first line, the first file's bracket, is kept.
// With §5 off each change is its plain confirmation ("Edited a.ts.", "Created b.md.", "Deleted
// c.md."), one per line, inserted like [Session.Result]. No changes: a result with empty text.
func (s *Session) Patched(changes []FileChange) string {
	if !s.m.Diffs {
		plain := make([]string, len(changes))
		for i, c := range changes {
			plain[i] = plainConfirmation(c)
		}
		return s.Result(strings.Join(plain, "\n"))
	}
	if len(changes) != 1 {
		var b strings.Builder
		for i, c := range changes {
			if i > 0 {
				b.WriteByte('\n')
			}
			head, rest := s.changeParts(c)
			b.WriteString("[" + head + "]" + rest)
		}
		return s.Result(b.String())
	}
	head, rest := s.changeParts(changes[0])
	if !s.m.ResultIDs {
		return "[" + head + "]" + rest
	}
	id := s.nextID()
	bracket := "[" + id + " " + head + "]"
	if !strings.HasPrefix(rest, "\n") {
		// A one-line form (created, deleted, an empty diff): never over the cap.
		s.keep(bracket+rest, -1)
		return bracket + rest
	}
	s.keep(bracket+rest, len(bracket)+1)
	if s.m.Caps {
		rest = "\n" + s.cfg.CapText(rest[1:], id)
	}
	return bracket + rest
}

// changeParts returns a change's bracket contents (path, then "sha …" or "deleted") and what
// follows the bracket: "\n" and the diff, " Created, N lines.", or "".
func (s *Session) changeParts(c FileChange) (head, rest string) {
	if c.Kind == Deleted {
		return c.Path + " " + s.cfg.Edit.Deleted, ""
	}
	sum := sha256.Sum256(c.Content)
	head = c.Path + " sha " + hex.EncodeToString(sum[:])[:s.cfg.Read.SHADigits]
	if c.Kind == Created {
		return head, " " + fill(s.cfg.Edit.Created, "lines", strconv.Itoa(len(Lines(string(c.Content)))))
	}
	if c.Diff == "" {
		return head, ""
	}
	return head, "\n" + c.Diff
}

// plainConfirmation is what a harness without §5 answers for a change.
func plainConfirmation(c FileChange) string {
	switch c.Kind {
	case Created:
		return "Created " + c.Path + "."
	case Deleted:
		return "Deleted " + c.Path + "."
	default:
		return "Edited " + c.Path + "."
	}
}
