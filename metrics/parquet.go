package metrics

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// RowGroupRows is how many rows a [ParquetSink] buffers before it writes them out as one row
// group. The writer keeps each row group's metadata (a column chunk, its statistics and page
// index for each of ~50 columns: about 45 KB) until Close writes the footer, so row groups of
// 16 rows made the heap grow by ~3 KB a request (26 MiB over 10,000 requests); 512 rows keep
// both the buffered rows (~0.5 MB) and that growth (~90 B a request) small.
const RowGroupRows = 512

// ParquetSink is a [Sink] that writes samples to a Parquet file (samples.parquet), one row per
// sample, with the columns of [Sample]'s parquet tags. It is safe for concurrent use.
//
// Rows are written as they come: every [RowGroupRows] rows form a row group that goes to the
// file at once, and Close writes the last row group and the footer. A Parquet file is unreadable without its
// footer, so a run interrupted before Close (a crash, a kill) leaves a file no reader can open:
// the caller must Close the sink on every path, errors and Ctrl-C (context cancellation)
// included, and check Close's error.
type ParquetSink struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	w       *parquet.GenericWriter[Sample]
	rows    int
	pending int
	closed  bool
}

// CreateParquet creates the file at path and returns a sink writing samples to it. It fails if
// the file already exists (errors.Is(err, fs.ErrExist)), so that no earlier measurement is
// overwritten; the directory must exist.
func CreateParquet(path string) (*ParquetSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create samples file: %w", err)
	}
	w := parquet.NewGenericWriter[Sample](f)
	return &ParquetSink{path: path, f: f, w: w}, nil
}

// Write appends a copy of s as one row (StartedAt converted to UTC). It returns [ErrClosed]
// after Close, an error for a nil s, and any error writing the file.
func (p *ParquetSink) Write(s *Sample) error {
	if s == nil {
		return errNilSample
	}
	row := *s
	row.StartedAt = row.StartedAt.UTC()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
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
	}
	return nil
}

// Len returns the number of rows written so far.
func (p *ParquetSink) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rows
}

// Close writes the buffered rows and the footer, syncs and closes the file. Its error must be
// checked: a failed Close leaves a file readers cannot open. Calling Close again returns nil and
// does nothing.
func (p *ParquetSink) Close() (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if werr := p.w.Close(); werr != nil {
		err = fmt.Errorf("write footer of %s: %w", p.path, werr)
	} else if serr := p.f.Sync(); serr != nil {
		err = fmt.Errorf("sync %s: %w", p.path, serr)
	}
	if cerr := p.f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", p.path, cerr))
	}
	return err
}

// ReadParquet reads every row of the samples file at path, in file order, with StartedAt in UTC.
// Columns the file lacks are left at their zero value (nil for optional ones); columns this
// version does not know are ignored. It fails on a file without footer (a run that never closed
// its sink).
func ReadParquet(path string) ([]Sample, error) {
	rows, err := parquet.ReadFile[Sample](path)
	if err != nil {
		return nil, fmt.Errorf("read samples %s: %w", path, err)
	}
	for i := range rows {
		rows[i].StartedAt = rows[i].StartedAt.UTC()
	}
	return rows, nil
}
