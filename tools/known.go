package tools

import (
	"io/fs"
	"iter"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// known is what a workspace knows of its project folder from having made it itself
// ([Workspace.Remember]): every regular file with its content and every folder, as they are on
// disk while nothing but the workspace's own writes changed them. The tools answer reads,
// listings and searches of what it holds from memory, and go to the folder for everything else
// (a name it does not hold, so that every error is the file system's own); each write the tools
// make goes to the folder first, then here, and one that fails, or anything it cannot follow (a
// shell), drops it ([Workspace.forget]). Folders are never links here: the workspace writes
// regular files and folders only.
type known struct {
	files map[string]*content // regular files, by name relative to the root ('/'-separated)
	dirs  map[string]bool     // folders, by the same names, "." (the root) included
	order []string            // the files' names in walk order; nil when to be sorted again
	bytes int64               // the files' bytes, bounded by maxKnownBytes
}

// maxKnownBytes bounds the bytes one workspace holds in memory (64 MiB): past it the workspace
// forgets and reads the folder.
const maxKnownBytes = 64 << 20

func newKnown() *known {
	return &known{files: map[string]*content{}, dirs: map[string]bool{".": true}}
}

// put records data as the file name's content, its folders with it (as writeFile creates
// them); false when the workspace would hold more than maxKnownBytes.
func (k *known) put(name string, data []byte) bool {
	if old := k.files[name]; old != nil {
		k.bytes -= int64(len(old.data))
	} else {
		k.order = nil
	}
	k.bytes += int64(len(data))
	if k.bytes > maxKnownBytes || k.dirs[name] {
		return false
	}
	k.files[name] = intern(data)
	for d := path.Dir(name); !k.dirs[d]; d = path.Dir(d) {
		k.dirs[d] = true
	}
	return true
}

// remove records that the file name was deleted (its folders stay, as on disk); false when it
// holds no such file (a folder, say), which the caller cannot follow.
func (k *known) remove(name string) bool {
	c := k.files[name]
	if c == nil {
		return false
	}
	k.bytes -= int64(len(c.data))
	delete(k.files, name)
	k.order = nil
	return true
}

// walkOrder returns the files' names in the order [Workspace.walk] meets them on disk: each
// folder's entries sorted by name, a folder's files where its name sorts. That is the names
// compared one path element at a time, which is a byte comparison with '/' below every other
// byte.
func (k *known) walkOrder() []string {
	if k.order == nil {
		k.order = make([]string, 0, len(k.files))
		for n := range k.files {
			k.order = append(k.order, n)
		}
		slices.SortFunc(k.order, comparePaths)
	}
	return k.order
}

// comparePaths compares two '/'-separated names one element at a time.
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// under reports whether name is the folder dir or below it.
func under(dir, name string) bool {
	return dir == "." || name == dir || strings.HasPrefix(name, dir+"/")
}

// knownEntry is one entry of a known folder: its name and whether it is a folder.
type knownEntry struct {
	name string
	dir  bool
}

// entries returns the entries of the folder dir, sorted by name, as [Workspace.readDir] reads
// them.
func (k *known) entries(dir string) []knownEntry {
	var out []knownEntry
	add := func(n string, isDir bool) {
		if n != "." && path.Dir(n) == dir {
			out = append(out, knownEntry{path.Base(n), isDir})
		}
	}
	for n := range k.files {
		add(n, false)
	}
	for n := range k.dirs {
		add(n, true)
	}
	slices.SortFunc(out, func(a, b knownEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// knownInfo is the [fs.FileInfo] of a known file or folder, for the tools' checks of its type
// and size (never for its times or permissions, which no answer names).
type knownInfo struct {
	name string
	size int64
	dir  bool
}

func (i knownInfo) Name() string { return path.Base(i.name) }
func (i knownInfo) Size() int64  { return i.size }
func (i knownInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i knownInfo) ModTime() time.Time { return time.Time{} }
func (i knownInfo) IsDir() bool        { return i.dir }
func (i knownInfo) Sys() any           { return nil }

// stat describes name when the workspace knows it; ok is false otherwise.
func (k *known) stat(name string) (fi fs.FileInfo, ok bool) {
	if c := k.files[name]; c != nil {
		return knownInfo{name: name, size: int64(len(c.data))}, true
	}
	if k.dirs[name] {
		return knownInfo{name: name, dir: true}, true
	}
	return nil, false
}

// content is one file content, shared by every workspace that holds a file with it (intern):
// the sessions of a matrix start from the same files and most make the same changes, so a search
// of one content is worked out once. data is never changed; it is a string so that a search
// reads it, and the lines it remembers point into it, without a copy.
type content struct {
	data string

	mu    sync.Mutex
	greps map[string][]grepLine // pattern → the lines that match, in order
	diffs map[*content]string   // a later content → [Hunks] of this one to it
}

// grepLine is one matching line of a content: its number (from 1) and text (a part of the
// content's data, not a copy).
type grepLine struct {
	n    int
	text string
}

// maxGrepsPerContent bounds the searches one content remembers.
const maxGrepsPerContent = 256

// grep returns the lines of c that re matches, as [Workspace.grep] searches a file: each line
// ([lab/hygiene.Lines]) without re's literal prefix skipped, every other one run through re. The
// answer is remembered by re's source.
func (c *content) grep(re *regexp.Regexp, prefix string) []grepLine {
	key := re.String()
	c.mu.Lock()
	got, ok := c.greps[key]
	c.mu.Unlock()
	if ok {
		return got
	}
	if prefix == "" || strings.Contains(c.data, prefix) {
		for n, line := range lines(c.data, strings.IndexByte) {
			if prefix != "" && !strings.Contains(line, prefix) {
				continue
			}
			if re.MatchString(line) {
				got = append(got, grepLine{n, line})
			}
		}
	}
	c.mu.Lock()
	if c.greps == nil {
		c.greps = map[string][]grepLine{}
	}
	if len(c.greps) < maxGrepsPerContent {
		c.greps[key] = got
	}
	c.mu.Unlock()
	return got
}

// lines yields the lines of text as [lab/hygiene.Lines] splits them (none for "", a last "\n"
// ending the last line), each with its number from 1: parts of text, with no slice of them all.
// indexByte is [strings.IndexByte] or [bytes.IndexByte], as T is.
func lines[T string | []byte](text T, indexByte func(T, byte) int) iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		if len(text) == 0 {
			return
		}
		if text[len(text)-1] == '\n' {
			text = text[:len(text)-1]
		}
		for n := 1; ; n++ {
			i := indexByte(text, '\n')
			if i < 0 {
				yield(n, text)
				return
			}
			if !yield(n, text[:i]) {
				return
			}
			text = text[i+1:]
		}
	}
}

// interned holds the contents workspaces know, each once, up to maxInternedBytes in all (64
// MiB, kept for the process's life: a matrix's sessions share a few megabytes); a content past
// that is a workspace's own.
var interned struct {
	mu    sync.Mutex
	m     map[string]*content
	bytes int64
}

const maxInternedBytes = 64 << 20

// intern returns the shared content equal to data (a copy of data, kept, when there is none;
// the table of them keys it by that same copy).
func intern(data []byte) *content {
	interned.mu.Lock()
	defer interned.mu.Unlock()
	if c := interned.m[string(data)]; c != nil {
		return c
	}
	c := &content{data: string(data)}
	if interned.bytes+int64(len(data)) > maxInternedBytes {
		return c
	}
	if interned.m == nil {
		interned.m = map[string]*content{}
	}
	interned.m[c.data] = c
	interned.bytes += int64(len(data))
	return c
}

// knownFor returns what w knows of its folder, nil when it does not (it was not told to
// remember, or forgot) or when a test plays a slow disk (readHook), which only the folder can.
func (w *Workspace) knownFor() *known {
	if readHook != nil {
		return nil
	}
	return w.known
}

// forget makes w read its folder from now on.
func (w *Workspace) forget() {
	w.known, w.made = nil, nil
	w.closeFolders()
}

// Remember makes the workspace answer its tools' reads, listings and searches of the project
// from what it wrote into the folder itself (the scenario's files, then every write and delete
// of its tools and of [Workspace.Outside]) instead of reading the folder again, and share the
// work of a search with every workspace that holds the same file content. Call it right after
// [NewSandboxWorkspace], and only when nothing else changes the project folder: the workspace
// forgets (and reads the folder from then on) when it makes a shell ([Workspace.ShellHome], whose
// commands may change anything), and after any write or delete that fails. The answers are the
// same as the folder's, byte for byte; names it does not hold, and every error, are the
// folder's own.
func (w *Workspace) Remember() { w.known = w.made }

// walkKnown is [Workspace.walk] from what k holds: the files below the folder name, in walk
// order.
func (w *Workspace) walkKnown(k *known, abs, name string, fn func(abs, name, rel string) error) error {
	for _, n := range k.walkOrder() {
		if n == name || !under(name, n) {
			continue
		}
		if err := w.alive(); err != nil {
			return err
		}
		rel := n
		if name != "." {
			rel = n[len(name)+1:]
		}
		if err := fn(filepath.Join(abs, filepath.FromSlash(rel)), n, rel); err != nil {
			return err
		}
	}
	return nil
}

// hunks is [Hunks](old, new), worked out once for two contents the workspaces hold (an edit the
// sessions of a matrix all make): remembered with old's content when both are interned.
func hunks(old, new string) string {
	interned.mu.Lock()
	a, b := interned.m[old], interned.m[new]
	interned.mu.Unlock()
	if a == nil || b == nil {
		return Hunks(old, new)
	}
	a.mu.Lock()
	d, ok := a.diffs[b]
	a.mu.Unlock()
	if ok {
		return d
	}
	d = Hunks(old, new)
	a.mu.Lock()
	if a.diffs == nil {
		a.diffs = map[*content]string{}
	}
	if len(a.diffs) < maxGrepsPerContent {
		a.diffs[b] = d
	}
	a.mu.Unlock()
	return d
}
