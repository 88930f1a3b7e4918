package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// This file reads samples as a stream: a Parquet file one batch of rows at a time into a reused
// buffer, a journal line by line, each row handed to a function. Nothing but the current batch is
// held by the reader, so that what a caller keeps per row is what it chooses to keep.

// rowsTo is where a stream of samples goes.
type rowsTo struct {
	// add takes one row; the *Sample is valid only during the call (its strings and pointer
	// fields are its own and may be kept). An error stops the read and is returned as it is.
	add func(*Sample) error
	// grow is told, when known, how many rows are coming (the Parquet file's row count); nil
	// ignores it.
	grow func(n int64)
	// reset drops the rows added since the read of the current file began: a Parquet file that
	// fails after some rows is then read from its journal instead. nil when add keeps nothing.
	reset func()
}

// stopped wraps an error of rowsTo.add, so that it is told apart from a read error.
type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }
func (s stopped) Unwrap() error { return s.err }

// interner returns one shared copy of each distinct string: the columns whose values repeat from
// row to row (run id, scenario, arm, model, divergence segment, …) then cost their bytes once per
// read, not once per row.
type interner map[string]string

func (in interner) of(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in[s]; ok {
		return v
	}
	s = strings.Clone(s)
	in[s] = s
	return s
}

// sample interns the repeating string columns of s. Warnings and Error, which differ from row to
// row, are left as they are.
func (in interner) sample(s *Sample) {
	for _, p := range []*string{&s.RunID, &s.Scenario, &s.Arm, &s.Backend, &s.Model, &s.ServerVersion, &s.Kind,
		&s.CachedSource, &s.DivergenceSegment, &s.Driver, &s.EndReason, &s.UsageFields} {
		*p = in.of(*p)
	}
}

// scanBatch is how many rows a Parquet read decodes at once: one row group of a sink's file.
const scanBatch = RowGroupRows

// scanParquet reads the samples file at path as [ReadParquet] does, handing each row to to in file
// order, [scanBatch] rows at a time. An error of to.add is returned wrapped in stopped.
func scanParquet(path string, in interner, to rowsTo) error {
	f, err := openRead(path)
	if err != nil {
		return fmt.Errorf("read samples %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read samples %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("read samples %s: %w", path, err)
	}
	if pf.NumRows() == 0 {
		return nil
	}
	if to.grow != nil {
		to.grow(pf.NumRows())
	}
	r := parquet.NewGenericReader[Sample](pf)
	defer r.Close()
	buf := make([]Sample, min(int64(scanBatch), pf.NumRows()))
	for {
		// Emptied before each batch, so that no row handed on shares a pointer field with the
		// next batch, whatever the reader reuses.
		clear(buf)
		n, rerr := r.Read(buf)
		for i := range buf[:n] {
			s := &buf[i]
			s.StartedAt = s.StartedAt.UTC()
			s.Upgrade()
			in.sample(s)
			if err := to.add(s); err != nil {
				return stopped{err}
			}
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return nil
		case rerr != nil:
			return fmt.Errorf("read samples %s: %w", path, rerr)
		case n == 0:
			return fmt.Errorf("read samples %s: the reader returned no row and no error", path)
		}
	}
}

// MaxJournalLine is the longest journal line read as a row, in bytes: 2 × 16 MiB + 1 MiB. A row
// holds figures, names and two texts (its error and warnings); the longest is an error quoting
// an answer of up to the default reply limit (16 MiB, chat.DefaultMaxReplyBytes), JSON-escaped
// at up to 2 bytes a byte, with 1 MiB for the rest. A longer line (a zero-filled tail a crash
// left) is a [BadLine], skipped without being held.
const MaxJournalLine = 2*16<<20 + 1<<20

// readJournalLine returns the next line of r with its '\n' (err io.EOF, as bufio.Reader.ReadBytes,
// for a last line without one), or, for a line longer than max bytes, long true and no line:
// it is read to its end and dropped, never held whole (at most max bytes of it at a time).
func readJournalLine(r *bufio.Reader, max int) (line []byte, long bool, err error) {
	var parts [][]byte // the line's full buffers, copied, as ReadBytes keeps them
	n := 0
	for {
		frag, err := r.ReadSlice('\n')
		if n += len(frag); n > max && !long {
			long = true
			clear(parts)
			parts = nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if long {
				return nil, true, err
			}
			if len(parts) == 0 {
				return append([]byte(nil), frag...), false, err
			}
			return slices.Concat(append(parts, frag)...), false, err
		}
		if !long {
			parts = append(parts, append([]byte(nil), frag...))
		}
	}
}

// scanJournal reads the journal f, at path, line by line, as [ReadJournal] does (inUse: a running
// sink still writes it), handing each row to to. It returns a [*JournalError] naming the lines
// that held no sample when there were any, after every other row; an error of to.add is returned
// wrapped in stopped.
func scanJournal(f io.Reader, path string, inUse bool, in interner, to rowsTo) error {
	var bad []BadLine
	kept := 0
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, long, err := readJournalLine(r, MaxJournalLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read samples journal %s: %w", path, err)
		}
		whole := err == nil
		if long {
			if !whole && inUse {
				break // the row a running sink is writing
			}
			bad = append(bad, BadLine{Path: path, Line: n, Cut: !whole, Err: fmt.Errorf("a line longer than %d bytes (MaxJournalLine), longer than any row: skipped unread", MaxJournalLine)})
		} else if len(bytes.TrimSpace(line)) > 0 {
			var s Sample
			if derr := decodeJournalLine(line, &s); derr != nil {
				if !whole && inUse {
					break // the row a running sink is writing
				}
				bad = append(bad, BadLine{Path: path, Line: n, Cut: !whole, Err: derr})
			} else {
				s.StartedAt = s.StartedAt.UTC()
				s.Upgrade()
				in.sample(&s)
				if err := to.add(&s); err != nil {
					return stopped{err}
				}
				kept++
			}
		}
		if !whole {
			break
		}
	}
	if len(bad) > 0 {
		return &JournalError{Bad: bad, Kept: kept}
	}
	return nil
}

// scanSamples reads the samples at path as [ReadSamples] does, handing each row to to: the Parquet
// file when it reads, else its journal (recovered true; inUse true when a running sink still
// writes it, [JournalInUse]). A Parquet file that fails after some rows were handed on has them
// dropped (to.reset) before its journal is read. An error of to.add is returned as it is.
func scanSamples(path string, in interner, to rowsTo) (recovered, inUse bool, err error) {
	err = scanParquet(path, in, to)
	var st stopped
	switch {
	case err == nil:
		return false, false, nil
	case errors.As(err, &st):
		return false, false, st.err
	}
	jf, jerr := openRead(JournalPath(path))
	if jerr != nil {
		if errors.Is(jerr, os.ErrNotExist) {
			return false, false, err
		}
		return false, false, fmt.Errorf("%v; and its journal: read samples journal: %w", err, jerr)
	}
	defer jf.Close()
	if to.reset != nil {
		to.reset()
	}
	// An open sink's exclusive lock makes the shared one fail.
	ok, lerr := tryLock(jf.f, false)
	inUse = lerr == nil && !ok
	jerr = scanJournal(jf, JournalPath(path), inUse, in, to)
	var je *JournalError
	switch {
	case jerr == nil:
		return true, inUse, nil
	case errors.As(jerr, &st):
		return true, inUse, st.err
	case errors.As(jerr, &je):
		return true, inUse, jerr
	default:
		return false, false, fmt.Errorf("%v; and its journal: %w", err, jerr)
	}
}

// collect returns a rowsTo appending each row to *rows, growing it once to the announced count
// and truncating it back to its length at the start on reset.
func collect(rows *[]Sample) rowsTo {
	start := len(*rows)
	return rowsTo{
		add:   func(s *Sample) error { *rows = append(*rows, *s); return nil },
		grow:  func(n int64) { *rows = growRows(*rows, n) },
		reset: func() { clear((*rows)[start:]); *rows = (*rows)[:start] },
	}
}

// growRows returns rows with room for n more, when n is a sane count, growing as append does (the
// rows of many files read one after another are copied a bounded number of times).
func growRows(rows []Sample, n int64) []Sample {
	if n <= 0 || n > 1<<31 {
		return rows
	}
	return slices.Grow(rows, int(n))
}
