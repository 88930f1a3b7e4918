package metrics

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ReadStats counts what this package's readers ([ReadRun], [AppendRunRows], [ReadRunManifest],
// [ReadParts], [ReadManifest], [ReadSamples], [ReadJournal], …) read of the files under one
// folder while it watches: per file, how often it was opened and which bytes were read, so that a
// test or a benchmark can check that reading runs reads no part, journal or manifest twice.
// Folder listings are not counted. [WatchReads] starts one; several may watch at once (each
// counts the files under its own folder); the lab itself starts none, and then reading costs one
// atomic load per file opened.
type ReadStats struct {
	root string                // absolute and clean
	by   map[string]*fileReads // by path relative to root, slash-separated; guarded by statsMu
}

// FileReads is what the readers read of one file while a [ReadStats] watched.
type FileReads struct {
	// Opens is how many times the file was opened.
	Opens int
	// Size is the file's size in bytes when it was last opened.
	Size int64
	// Bytes is the number of bytes read, summed over every read.
	Bytes int64
	// Twice is the number of bytes read again: Bytes less the distinct bytes read (a byte read
	// three times counts twice), 0 when no byte was read twice.
	Twice int64
}

// fileReads is a file's count while it is being read: its opens, size and the byte ranges read.
type fileReads struct {
	opens  int
	size   int64
	bytes  int64
	ranges [][2]int64 // [offset, end) of each read, in the order read
}

// watchers are the ReadStats watching now (a copy-on-write list, so that reading with none costs
// one atomic load); statsMu guards changes to it and every count.
var (
	watchers atomic.Pointer[[]*ReadStats]
	statsMu  sync.Mutex
)

// WatchReads starts counting the reads of the files under the folder dir (made absolute) and
// returns the count; [ReadStats.Stop] ends it.
func WatchReads(dir string) *ReadStats {
	root, err := filepath.Abs(dir)
	if err != nil {
		root = filepath.Clean(dir)
	}
	s := &ReadStats{root: root, by: map[string]*fileReads{}}
	statsMu.Lock()
	defer statsMu.Unlock()
	var list []*ReadStats
	if l := watchers.Load(); l != nil {
		list = slices.Clone(*l)
	}
	list = append(list, s)
	watchers.Store(&list)
	return s
}

// Stop ends the count; what was counted stays readable.
func (s *ReadStats) Stop() {
	statsMu.Lock()
	defer statsMu.Unlock()
	l := watchers.Load()
	if l == nil {
		return
	}
	list := slices.DeleteFunc(slices.Clone(*l), func(w *ReadStats) bool { return w == s })
	watchers.Store(&list)
}

// Files returns what was read of each file opened, by its path relative to the watched folder
// (slash-separated, for example "run_id=a/part-0001-of-0001.parquet").
func (s *ReadStats) Files() map[string]FileReads {
	statsMu.Lock()
	defer statsMu.Unlock()
	out := make(map[string]FileReads, len(s.by))
	for name, f := range s.by {
		out[name] = FileReads{Opens: f.opens, Size: f.size, Bytes: f.bytes, Twice: twice(f.ranges)}
	}
	return out
}

// twice returns how many bytes the ranges read again: their summed length less the length of
// their union.
func twice(ranges [][2]int64) int64 {
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var n, reach int64 // reach: the end of the bytes covered so far
	for i, r := range rs {
		if i > 0 && r[0] < reach {
			n += min(r[1], reach) - r[0]
		}
		if i == 0 || r[1] > reach {
			reach = r[1]
		}
	}
	return n
}

// watched returns the count of path for every ReadStats watching it, nil when none does.
func watched(path string) []*fileReads {
	l := watchers.Load()
	if l == nil || len(*l) == 0 {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	var out []*fileReads
	for _, s := range *l {
		rel, err := filepath.Rel(s.root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		rel = filepath.ToSlash(rel)
		statsMu.Lock()
		f := s.by[rel]
		if f == nil {
			f = &fileReads{}
			s.by[rel] = f
		}
		statsMu.Unlock()
		out = append(out, f)
	}
	return out
}

// countedFile is a file of a run folder opened by this package's readers, with the counts that
// watch it (none: reads go straight to the file). It has the file's Read, ReadAt and Close only,
// so that no read can bypass the count.
type countedFile struct {
	f      *os.File
	counts []*fileReads
	off    int64 // the offset of the next Read
}

// openRead opens path for reading and counts the open for every [ReadStats] watching it.
func openRead(path string) (*countedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c := &countedFile{f: f, counts: watched(path)}
	if len(c.counts) > 0 {
		var size int64
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		statsMu.Lock()
		for _, w := range c.counts {
			w.opens++
			w.size = size
		}
		statsMu.Unlock()
	}
	return c, nil
}

// readFile reads the whole file at path as os.ReadFile does, counted as [openRead] counts.
func readFile(path string) ([]byte, error) {
	f, err := openRead(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// note counts n bytes read at off.
func (c *countedFile) note(off int64, n int) {
	if n <= 0 {
		return
	}
	statsMu.Lock()
	defer statsMu.Unlock()
	for _, w := range c.counts {
		w.bytes += int64(n)
		w.ranges = append(w.ranges, [2]int64{off, off + int64(n)})
	}
}

// Read implements io.Reader, counting the bytes read.
func (c *countedFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	if len(c.counts) > 0 {
		c.note(c.off, n)
		c.off += int64(n)
	}
	return n, err
}

// ReadAt implements io.ReaderAt, counting the bytes read.
func (c *countedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	if len(c.counts) > 0 {
		c.note(off, n)
	}
	return n, err
}

// Close closes the file.
func (c *countedFile) Close() error { return c.f.Close() }

// Stat returns the file's FileInfo.
func (c *countedFile) Stat() (os.FileInfo, error) { return c.f.Stat() }
