package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// SchemaVersion is the version of the columns of [Sample] that a samples file holds, recorded in
// its key/value metadata ([MetaSchemaVersion]). Bump it whenever the columns change: one added,
// removed, retyped, or whose meaning or unit changes. Files without the key predate it (schema
// 1: some figures the lab did not measure were stored as 0). Version 2 is the nullable schema: a
// figure the lab did not measure is null, never 0.
const SchemaVersion = 2

// The keys of a samples file's Parquet key/value metadata (the footer's key_value_metadata), which
// any Parquet reader shows (DuckDB: parquet_kv_metadata). A key whose value is unknown is left out.
const (
	// MetaRunID is the run id, as in the run_id column and the folder's name.
	MetaRunID = "lab.run_id"
	// MetaLabVersion is the version of the lab that measured the rows ([Manifest].LabVersion).
	MetaLabVersion = "lab.lab_version"
	// MetaSchemaVersion is [SchemaVersion] in decimal.
	MetaSchemaVersion = "lab.schema_version"
	// MetaPart is the part of the run the file holds, "i/n" ([Shard.String]; "1/1" for a run not
	// split, and in the old layout).
	MetaPart = "lab.part"
	// MetaRepairedAt is when lab repair wrote the file from its journal (RFC 3339, UTC); absent
	// from a file its run closed itself.
	MetaRepairedAt = "lab.repaired_at"
	// MetaRepairedBy is the version of the lab that repaired the file.
	MetaRepairedBy = "lab.repaired_by"
	// MetaRepairedLostLines is the number of journal lines that held no sample and were skipped
	// when the file was repaired, in decimal ("0" when none was).
	MetaRepairedLostLines = "lab.repaired_lost_lines"
)

// FileMeta is what a samples file says about the run in its key/value metadata (besides
// [MetaSchemaVersion] and [MetaPart], which the writer fills in). An empty field is unknown and its
// key is left out.
type FileMeta struct {
	// RunID is the run's id ([MetaRunID]).
	RunID string
	// LabVersion is the version of the lab that measures the rows ([MetaLabVersion]).
	LabVersion string
}

// FileMeta returns the file metadata of the run m describes: its run id and lab version.
func (m *Manifest) FileMeta() FileMeta {
	if m == nil {
		return FileMeta{}
	}
	return FileMeta{RunID: m.RunID, LabVersion: m.LabVersion}
}

// zstdCodec compresses every column chunk of the files the lab writes (Zstandard, its default
// level, about zstd -3). It is safe for concurrent use.
var zstdCodec = &zstd.Codec{Level: zstd.SpeedDefault}

// writerOptions are the Parquet writer's options for a samples file of part s with meta: every
// column zstd-compressed, and the key/value metadata (meta's keys, [MetaSchemaVersion],
// [MetaPart], then extra, key after value).
func writerOptions(meta FileMeta, s Shard, extra ...string) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		parquet.Compression(zstdCodec),
		parquet.KeyValueMetadata(MetaSchemaVersion, strconv.Itoa(SchemaVersion)),
		parquet.KeyValueMetadata(MetaPart, s.String()),
	}
	for _, kv := range [][2]string{{MetaRunID, meta.RunID}, {MetaLabVersion, meta.LabVersion}} {
		if kv[1] != "" {
			opts = append(opts, parquet.KeyValueMetadata(kv[0], kv[1]))
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts = append(opts, parquet.KeyValueMetadata(extra[i], extra[i+1]))
	}
	return opts
}

// RowGroupRows is how many rows a [ParquetSink] buffers before it writes them out as one row
// group. The writer keeps each row group's metadata (a column chunk, its statistics and page
// index for each of ~50 columns: about 45 KB) until Close writes the footer, so row groups of
// 16 rows made the heap grow by ~3 KB a request (26 MiB over 10,000 requests); 512 rows keep
// both the buffered rows (~0.5 MB) and that growth (~90 B a request) small. A sink made by
// [CreateJournalPart] writes its row groups at Close only, and holds no such metadata before.
const RowGroupRows = 512

// ParquetSink is a [Sink] that writes samples to a Parquet file (a run's part,
// part-0001-of-0001.parquet, made by [CreatePart]), one row per
// sample, with the columns of [Sample]'s parquet tags, and keeps a journal of the same rows beside
// it ([JournalPath]). It is safe for concurrent use.
//
// Rows are written as they come: every [RowGroupRows] rows form a row group that goes to the
// file at once, and Close writes the last row group and the footer. A Parquet file is unreadable
// without its footer, so the sink also appends each row, as it is written, as one JSON line to the
// journal: the line reaches the operating system before Write returns
// (a process killed with SIGKILL loses no row), and the journal is synced to disk with every row
// group (a power cut loses at most the rows of the last row group). While the sink is open its
// process holds an advisory lock on the journal (flock, where the system has it), so that lab
// repair ([RepairRun]) leaves a part that is still being written alone. Close removes the
// journal once the Parquet file is whole; [ReadSamples] and [ReadRun] read the journal's rows when the Parquet
// file is missing or unreadable. The caller must still Close the sink on every path, errors and
// Ctrl-C (context cancellation) included, and check Close's error.
type ParquetSink struct {
	mu    sync.Mutex
	path  string
	jpath string
	// final, when set, is the name Close renames path to once the file is whole ([CreatePart]).
	final   string
	f       *os.File
	j       *os.File
	w       *parquet.GenericWriter[Sample]
	rows    int
	pending int
	closed  bool
	// journalOnly: Write appends to the journal alone and Close writes the Parquet file from
	// it, with opts ([CreateJournalPart]); w is nil.
	journalOnly bool
	opts        []parquet.WriterOption
}

// JournalPath returns the path of the journal kept beside the samples file at path: path with its
// ".parquet" extension replaced by ".journal.jsonl" (part-0001-of-0001.journal.jsonl;
// samples.journal.jsonl, [JournalFile], in the old layout), or path + ".journal.jsonl" when it
// has no such extension.
func JournalPath(path string) string {
	return strings.TrimSuffix(path, ".parquet") + ".journal.jsonl"
}

// createParquet creates the samples file at path, written with opts, and the journal at jpath,
// both new: it fails if either file already exists (errors.Is(err, fs.ErrExist)), so that no
// earlier measurement is overwritten. journalOnly makes the sink of [CreateJournalPart]. Its
// production callers are CreatePart and CreateJournalPart: nothing writes a samples file of the
// old layout.
func createParquet(path, jpath string, opts []parquet.WriterOption, journalOnly bool) (*ParquetSink, error) {
	j, err := os.OpenFile(jpath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create samples journal: %w", err)
	}
	// The lock says to lab repair that a process still writes this journal ([RepairRun]).
	_, _ = tryLock(j, true)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		_ = j.Close()
		_ = os.Remove(j.Name())
		return nil, fmt.Errorf("create samples file: %w", err)
	}
	if journalOnly {
		return &ParquetSink{path: path, jpath: j.Name(), f: f, j: j, journalOnly: true, opts: opts}, nil
	}
	return &ParquetSink{path: path, jpath: j.Name(), f: f, j: j, w: parquet.NewGenericWriter[Sample](f, opts...)}, nil
}

// writeJournal replaces the journal at jpath with one holding rows, atomically: a temporary file,
// synced, renamed over it, and the directory synced.
func writeJournal(jpath string, rows []Sample) error {
	err := WriteFileAtomic(jpath, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for i := range rows {
			line, err := journalLine(&rows[i])
			if err != nil {
				return err
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("replace samples journal: %w", err)
	}
	return nil
}

// reopenParquet creates the samples file at path (which must not exist), opens the journal at
// jpath (which already holds rows) for appending, and writes rows to the new file, written with
// opts.
func reopenParquet(path, jpath string, rows []Sample, opts []parquet.WriterOption) (*ParquetSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create samples file: %w", err)
	}
	j, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open samples journal: %w", err)
	}
	_, _ = tryLock(j, true)
	p := &ParquetSink{path: path, jpath: jpath, f: f, j: j, w: parquet.NewGenericWriter[Sample](f, opts...)}
	for i := range rows {
		if err := p.writeParquet(rows[i]); err != nil {
			_ = p.w.Close()
			_ = f.Close()
			_ = j.Close()
			return nil, err
		}
	}
	return p, nil
}

// syncDir syncs a directory so that a rename in it survives a power cut; where directories
// cannot be synced (Windows) it does nothing.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// journalLine is s as one line of the journal: its JSON (the json tags of [Sample]) and "\n".
func journalLine(s *Sample) ([]byte, error) {
	line, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode sample: %w", err)
	}
	return append(line, '\n'), nil
}

// Write appends a copy of s as one row (StartedAt converted to UTC): first to the journal, as one
// line handed to the operating system, then to the Parquet writer. It returns [ErrClosed] after
// Close, an error for a nil s, and any error writing either file.
func (p *ParquetSink) Write(s *Sample) error {
	if s == nil {
		return errNilSample
	}
	row := *s
	row.StartedAt = row.StartedAt.UTC()
	line, err := journalLine(&row)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if _, err := p.j.Write(line); err != nil {
		return fmt.Errorf("write sample to %s: %w", p.jpath, err)
	}
	if p.journalOnly {
		p.rows++
		if p.pending++; p.pending >= RowGroupRows {
			p.pending = 0
			if err := p.j.Sync(); err != nil {
				return fmt.Errorf("sync %s: %w", p.jpath, err)
			}
		}
		return nil
	}
	return p.writeParquet(row)
}

// writeParquet writes row to the Parquet writer and, every [RowGroupRows] rows, flushes a row
// group and syncs the journal. p.mu must be held (or p not yet shared).
func (p *ParquetSink) writeParquet(row Sample) error {
	if _, err := p.w.Write([]Sample{row}); err != nil {
		return fmt.Errorf("write sample to %s: %w", p.path, err)
	}
	p.rows++
	p.pending++
	if p.pending >= RowGroupRows {
		p.pending = 0
		if err := p.w.Flush(); err != nil {
			return fmt.Errorf("flush row group to %s: %w", p.path, err)
		}
		if err := p.j.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", p.jpath, err)
		}
	}
	return nil
}

// writeFromJournal writes every row of the journal to p.w, in row groups of [RowGroupRows]
// rows, reading the journal line by line (the rows are never held together). Each line is
// decoded once, into a reused row: the sink wrote every line itself, so a line that does not
// decode, or a count of lines other than the rows written, is an error. p.mu must be held.
func (p *ParquetSink) writeFromJournal() error {
	if err := p.j.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", p.jpath, err)
	}
	jf, err := os.Open(p.jpath)
	if err != nil {
		return fmt.Errorf("read samples journal: %w", err)
	}
	defer jf.Close()
	r := bufio.NewReaderSize(jf, 64<<10)
	rows := make([]Sample, 1)
	n := 0
	for {
		line, long, err := readJournalLine(r, MaxJournalLine)
		if errors.Is(err, io.EOF) && len(line) == 0 && !long {
			break
		}
		if err != nil || long {
			return fmt.Errorf("write %s from its journal: %s:%d: a line cut short or too long (%v)", p.path, p.jpath, n+1, err)
		}
		rows[0] = Sample{}
		if err := json.Unmarshal(line, &rows[0]); err != nil {
			return fmt.Errorf("write %s from its journal: %s:%d: %w", p.path, p.jpath, n+1, err)
		}
		if _, err := p.w.Write(rows); err != nil {
			return fmt.Errorf("write sample to %s: %w", p.path, err)
		}
		if n++; n%RowGroupRows == 0 {
			if err := p.w.Flush(); err != nil {
				return fmt.Errorf("flush row group to %s: %w", p.path, err)
			}
		}
	}
	if n != p.rows {
		return fmt.Errorf("write %s from its journal: %d rows in %s, %d written to it", p.path, n, p.jpath, p.rows)
	}
	return nil
}

// Len returns the number of rows written so far.
func (p *ParquetSink) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rows
}

// Close writes the buffered rows and the footer, syncs and closes the file, renames it to its
// final name (a part made by [CreatePart] or [ReplacePart]: [PartFile]), then closes and removes
// the journal. Its error must be checked: after a failed Close the Parquet file may be
// unreadable, and the journal is kept so that readers recover the rows from it. Calling Close
// again returns nil and does nothing.
func (p *ParquetSink) Close() (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.journalOnly {
		p.w = parquet.NewGenericWriter[Sample](p.f, p.opts...)
		if werr := p.writeFromJournal(); werr != nil {
			err = werr
		} else if werr := p.w.Close(); werr != nil {
			err = fmt.Errorf("write footer of %s: %w", p.path, werr)
		} else if serr := p.f.Sync(); serr != nil {
			err = fmt.Errorf("sync %s: %w", p.path, serr)
		}
	} else if werr := p.w.Close(); werr != nil {
		err = fmt.Errorf("write footer of %s: %w", p.path, werr)
	} else if serr := p.f.Sync(); serr != nil {
		err = fmt.Errorf("sync %s: %w", p.path, serr)
	}
	if cerr := p.f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", p.path, cerr))
	}
	if cerr := p.j.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", p.jpath, cerr)
	}
	if err == nil && p.final != "" {
		// The file is whole: it takes its final name, then the journal may go.
		if rerr := os.Rename(p.path, p.final); rerr != nil {
			err = fmt.Errorf("rename %s: %w", p.path, rerr)
		} else {
			syncDir(filepath.Dir(p.final))
		}
	}
	if err == nil {
		if rerr := os.Remove(p.jpath); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("remove %s: %w", p.jpath, rerr)
		}
	}
	return err
}

// ReadParquet reads every row of the samples file at path, in file order, with StartedAt in UTC.
// Columns the file lacks are left at their zero value (nil for optional ones); columns this
// version does not know are ignored; rows of older files are upgraded ([Sample.Upgrade]). It fails on a file without footer (a run that never closed
// its sink).
func ReadParquet(path string) ([]Sample, error) {
	var rows []Sample
	to := collect(&rows)
	to.reset = nil
	if err := scanParquet(path, interner{}, to); err != nil {
		return nil, err
	}
	return rows, nil
}

// BadLine is a line of a samples journal that holds no sample: one a crash cut short, or one
// that is not a sample's JSON.
type BadLine struct {
	// Path is the journal's path.
	Path string
	// Line is the 1-based line number.
	Line int
	// Cut is true for the last line when it has no newline: a write the kill or crash cut short.
	Cut bool
	// Err is why the line is not a sample: the JSON decoder's error, or what a JSON value that
	// is no sample lacks (null, {}, an object without run_id or started_at).
	Err error
}

// String returns "path:line: why", the form of a compiler's error.
func (b BadLine) String() string {
	if b.Cut {
		return fmt.Sprintf("%s:%d: the last line is cut short (no newline, not whole JSON: a write the kill interrupted): %v", b.Path, b.Line, b.Err)
	}
	return fmt.Sprintf("%s:%d: not a sample: %v", b.Path, b.Line, b.Err)
}

// JournalError is the error that comes with the rows of journals some lines of which hold no
// sample ([BadLine]): each such line is skipped and its row lost; every other line's row is kept.
// Readers return it together with the rows they kept.
type JournalError struct {
	// Bad are the lines skipped, journal by journal, in line order.
	Bad []BadLine
	// Kept is the number of rows read from the journals that had bad lines.
	Kept int
}

// Error says how many lines were lost and names each ("3 journal lines lost (a:2: …; …); 45
// rows kept").
func (e *JournalError) Error() string {
	var b strings.Builder
	word := "line"
	if len(e.Bad) != 1 {
		word = "lines"
	}
	fmt.Fprintf(&b, "%d journal %s lost (", len(e.Bad), word)
	for i, l := range e.Bad {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(l.String())
	}
	fmt.Fprintf(&b, "); %d rows kept", e.Kept)
	return b.String()
}

// joinJournalErrors merges the [JournalError]s of several journals into one, nil when none.
func joinJournalErrors(errs []*JournalError) *JournalError {
	var out *JournalError
	for _, e := range errs {
		if e == nil {
			continue
		}
		if out == nil {
			out = &JournalError{}
		}
		out.Bad = append(out.Bad, e.Bad...)
		out.Kept += e.Kept
	}
	return out
}

// ReadJournal reads the rows of a samples journal ([JournalPath]): one JSON object per line, in
// the order they were written, with StartedAt in UTC. A last line without its newline that is
// whole JSON is kept (the kill came between the row and its newline). Every line that holds no
// sample, a last line cut short as a line in the middle, is skipped: ReadJournal then returns
// every other line's row with a [*JournalError] naming each skipped line (file:line). The one
// exception is a cut last line of a journal a running sink still writes ([JournalInUse]): that
// row is being written, not lost, and is left out without an error. Any other error (the file
// cannot be opened or read) comes with no rows; errors.Is(err, fs.ErrNotExist) for a missing
// journal.
func ReadJournal(path string) ([]Sample, error) {
	f, err := openRead(path)
	if err != nil {
		return nil, fmt.Errorf("read samples journal: %w", err)
	}
	defer f.Close()
	// An open sink's exclusive lock makes the shared one fail.
	ok, lerr := tryLock(f.f, false)
	return readJournal(f, path, lerr == nil && !ok)
}

// readJournal reads the journal f, at path, as [ReadJournal] does; inUse says a running sink
// still writes it.
func readJournal(f io.Reader, path string, inUse bool) ([]Sample, error) {
	var rows []Sample
	if err := scanJournal(f, path, inUse, interner{}, collect(&rows)); err != nil {
		var je *JournalError
		if errors.As(err, &je) {
			return rows, err
		}
		return nil, err
	}
	return rows, nil
}

// decodeJournalLine decodes one journal line into s. A line is a sample only when it is a JSON
// object naming run_id and started_at, which every row a sink ever wrote carries: null, {}, an
// array or an object without them is an error (a bad line), never a row of zeros.
func decodeJournalLine(line []byte, s *Sample) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '{' && json.Valid(t) {
			return fmt.Errorf("%.20s is not a JSON object", t)
		}
		return err
	}
	if keys == nil {
		return errors.New("null is not a JSON object")
	}
	for _, k := range []string{"run_id", "started_at"} {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("the object has no %s", k)
		}
	}
	return json.Unmarshal(line, s)
}

// JournalInUse reports whether a lab process has the samples journal at path open for writing:
// a running run's [ParquetSink], which holds an exclusive advisory lock on it (flock; false
// where the system has none, and for a missing journal).
func JournalInUse(path string) bool {
	f, err := openRead(path)
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := tryLock(f.f, false)
	return err == nil && !ok
}

// ReadSamples reads the samples of the Parquet file at path ([ReadParquet]); when that file is
// missing or unreadable (a run killed before its sink closed it) and its journal ([JournalPath])
// exists, it returns the journal's rows instead ([ReadJournal]), with recovered true, and, when
// some journal lines held no sample, a [*JournalError] with the rows kept. Without a journal it
// returns ReadParquet's error (errors.Is(err, fs.ErrNotExist) for a missing file); a journal that
// cannot be read gives an error naming both files that does not match fs.ErrNotExist unless the
// journal is missing too.
func ReadSamples(path string) (rows []Sample, recovered bool, err error) {
	recovered, _, err = scanSamples(path, interner{}, collect(&rows))
	var je *JournalError
	if err != nil && !errors.As(err, &je) {
		return nil, false, err
	}
	return rows, recovered, err
}
