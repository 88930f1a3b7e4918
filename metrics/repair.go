package metrics

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
)

// RepairAction is what [RepairRun] did with one part of a run.
type RepairAction string

// The actions of [RepairRun].
const (
	// RepairWhole: the part's samples file reads; nothing was done.
	RepairWhole RepairAction = "whole"
	// RepairWritten: the samples file was missing or unreadable, and was written from the
	// journal's rows.
	RepairWritten RepairAction = "repaired"
	// RepairNoRows: neither samples file nor journal, and the manifest counts no row: the part
	// measured nothing (killed before its first request, or a shard with no session).
	RepairNoRows RepairAction = "no rows"
	// RepairFailed: the part could not be repaired ([PartRepair].Err says why).
	RepairFailed RepairAction = "failed"
)

// PartRepair is what [RepairRun] found and did for one part of a run.
type PartRepair struct {
	// Shard is the part.
	Shard Shard
	// File is the path of the part's samples file ([PartFile]).
	File string
	// Journal is the path of its journal ([JournalPath]).
	Journal string
	// Action is what was done.
	Action RepairAction
	// Rows is the number of rows the samples file holds: read (whole) or written (repaired).
	Rows int
	// Lost are the journal lines that held no sample, skipped (repaired parts only).
	Lost []BadLine
	// Counted is the number of rows the part's manifest counted before the repair; a repaired
	// part with fewer Rows lost rows besides Lost.
	Counted int
	// Removed are the files removed once the samples file was written and synced: the journal and
	// a partial file without footer ([PartialSuffix]).
	Removed []string
	// Note says something the user should know about a part otherwise whole (a journal left
	// beside it); "" when there is nothing.
	Note string
	// Err is why the part could not be repaired (Action [RepairFailed]), naming the file.
	Err error
}

// LostRows reports whether the part lost rows: journal lines skipped, fewer rows than its
// manifest counted, or no repair possible.
func (p *PartRepair) LostRows() bool {
	return p.Action == RepairFailed || len(p.Lost) > 0 || (p.Action == RepairWritten && p.Rows < p.Counted)
}

// RepairRun makes every part of the run folder dir (of the part layout) whose samples file is
// missing or unreadable, a run killed before it closed the part, a whole samples file again,
// from the rows of the part's journal, without measuring anything again. For each such part, in
// shard order:
//
//  1. it reads the journal ([ReadJournal]): every line that holds a sample is kept, every other
//     one (cut short by the kill, or corrupt) is skipped and named in [PartRepair].Lost;
//  2. it writes the samples file with those rows, atomically ([WriteFileAtomic]: a temporary
//     file, synced, renamed to the part's final name), zstd-compressed with the run's file
//     metadata (from the manifest) and [MetaRepairedAt], [MetaRepairedBy] (labVersion) and
//     [MetaRepairedLostLines];
//  3. it records the repair in the part's manifest ([RepairRecord]; samples set to the rows
//     written; complete stays as it was, false for a run that did not complete; an empty error
//     becomes one saying the part was not closed);
//  4. only then it removes the journal and the partial file the kill left.
//
// A part whose samples file reads is left alone ([RepairWhole]); one whose journal another
// process holds locked (a run still writing it) is not touched ([RepairFailed]). now gives the
// time of the repair. The error is for a folder that holds no run or whose manifests cannot be
// read, or a run of the old layout (manifest.json, samples.parquet), which is read only: its
// error wraps [ErrOldLayout] and nothing in the folder is written (its readers take a killed
// run's rows from its journal); a part that cannot be repaired is reported in its [PartRepair].
func RepairRun(dir, labVersion string, now time.Time) ([]PartRepair, error) {
	l, err := DetectLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", dir, err)
	}
	switch l {
	case LayoutNone:
		return nil, fmt.Errorf("repair %s: not a run folder (no %s, no %s): %w", dir, PartManifestFile(Shard{1, 1}), ManifestFile, fs.ErrNotExist)
	case LayoutSingle:
		// The old layout is read only: nothing is written into it.
		return nil, oldLayoutRepairError(dir)
	}
	parts, err := ReadParts(dir)
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", dir, err)
	}
	var out []PartRepair
	for _, pt := range parts {
		final := filepath.Join(dir, PartFile(pt.Shard))
		out = append(out, repairPart(final, final+PartialSuffix, filepath.Join(dir, PartManifestFile(pt.Shard)), pt.Shard, labVersion, now))
	}
	return out, nil
}

// oldLayoutRepairError is [ErrOldLayout] for a repair of the old-layout folder dir, with what
// to do instead: nothing, to read it.
func oldLayoutRepairError(dir string) error {
	return fmt.Errorf("repair %s: %w: lab repair writes nothing into it; lab report, lab compare and lab check --run read its rows as they are, from %s's journal (%s) when %s has no footer, so it needs no repair to be read", dir, ErrOldLayout, SamplesFile, JournalFile, SamplesFile)
}

// repairPart repairs one part: its samples file at path (final name), the partial file a part
// is written to first, its manifest at manPath.
func repairPart(path, partial, manPath string, s Shard, labVersion string, now time.Time) PartRepair {
	jpath := JournalPath(path)
	r := PartRepair{Shard: s.Norm(), File: path, Journal: jpath}
	fail := func(err error) PartRepair {
		r.Action, r.Err = RepairFailed, err
		return r
	}
	man, err := ReadManifest(manPath)
	if err != nil {
		return fail(err)
	}
	r.Counted = man.Samples
	// A journal another process holds locked is still being written: the part is not ours.
	j, jerr := os.Open(jpath)
	if jerr == nil {
		defer j.Close()
		if ok, lerr := tryLock(j, true); !ok && lerr == nil {
			return fail(fmt.Errorf("%s is locked: a lab process is still writing this part; stop it (Ctrl-C closes the part itself) or let it end", jpath))
		}
	} else if !errors.Is(jerr, fs.ErrNotExist) {
		return fail(fmt.Errorf("repair %s: %w", path, jerr))
	}
	rows, perr := ReadParquet(path)
	if perr == nil {
		r.Action, r.Rows = RepairWhole, len(rows)
		if jerr == nil {
			r.Note = fmt.Sprintf("%s is left beside it (the run stopped after the part was whole); the part file holds the part's rows", filepath.Base(jpath))
		}
		return r
	}
	_, serr := os.Stat(path)
	missing := errors.Is(serr, fs.ErrNotExist)
	if errors.Is(jerr, fs.ErrNotExist) {
		switch {
		case !missing:
			return fail(fmt.Errorf("%s is unreadable and has no journal (%s) to repair it from: %w", path, filepath.Base(jpath), perr))
		case man.Samples > 0:
			return fail(fmt.Errorf("%s counts %d rows, but neither %s nor its journal %s exists", manPath, man.Samples, filepath.Base(path), filepath.Base(jpath)))
		}
		r.Action = RepairNoRows
		return r
	}
	// Read through the file this repair holds locked (ReadJournal would see the lock as a sink's).
	rows, err = readJournal(j, jpath, false)
	var je *JournalError
	if errors.As(err, &je) {
		r.Lost = je.Bad
	} else if err != nil {
		return fail(err)
	}
	at := now.UTC().Truncate(time.Second)
	meta := man.FileMeta()
	extra := []string{MetaRepairedAt, at.Format(time.RFC3339), MetaRepairedLostLines, strconv.Itoa(len(r.Lost))}
	if labVersion != "" {
		extra = append(extra, MetaRepairedBy, labVersion)
	}
	if err := WriteFileAtomic(path, func(w io.Writer) error {
		return writeRows(w, rows, writerOptions(meta, s, extra...))
	}); err != nil {
		return fail(fmt.Errorf("repair %s: %w", path, err))
	}
	r.Action, r.Rows = RepairWritten, len(rows)
	// The part file is whole and synced: the manifest records the repair, then the journal goes.
	man.Repairs = append(man.Repairs, RepairRecord{Part: r.Shard.String(), At: at, LabVersion: labVersion,
		From: filepath.Base(jpath), Rows: len(rows), LostLines: len(r.Lost)})
	man.Samples = len(rows)
	if !man.Complete && man.Error == "" {
		man.Error = "stopped without closing its samples file (killed, or the machine stopped); repaired from its journal"
	}
	if err := WriteManifest(manPath, man); err != nil {
		return fail(fmt.Errorf("repair %s: %s is written, its manifest is not: %w", path, filepath.Base(path), err))
	}
	for _, f := range []string{jpath, partial} {
		err := os.Remove(f)
		switch {
		case err == nil:
			r.Removed = append(r.Removed, f)
		case !errors.Is(err, fs.ErrNotExist):
			return fail(fmt.Errorf("repair %s: %s is written, but: %w", path, filepath.Base(path), err))
		}
	}
	syncDir(filepath.Dir(path))
	return r
}

// writeRows writes rows to w as one whole Parquet samples file with opts, in row groups of
// [RowGroupRows] rows, as a [ParquetSink] does.
func writeRows(w io.Writer, rows []Sample, opts []parquet.WriterOption) error {
	pw := parquet.NewGenericWriter[Sample](w, opts...)
	for len(rows) > 0 {
		n := min(len(rows), RowGroupRows)
		if _, err := pw.Write(rows[:n]); err != nil {
			return err
		}
		if err := pw.Flush(); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return pw.Close()
}

// UnclosedParts returns the journals of the run folder dir (either layout) whose samples file is
// missing or has no readable footer: the parts a killed run left, whose rows readers take from
// the journal and which [RepairRun] would write. It reads only the files' footers; a folder
// that holds no run has none.
func UnclosedParts(dir string) []string {
	var paths []string
	switch l, _ := DetectLayout(dir); l {
	case LayoutSingle:
		paths = []string{filepath.Join(dir, SamplesFile)}
	case LayoutParts:
		parts, err := ReadParts(dir)
		if err != nil {
			return nil
		}
		for _, p := range parts {
			paths = append(paths, filepath.Join(dir, PartFile(p.Shard)))
		}
	}
	var out []string
	for _, p := range paths {
		j := JournalPath(p)
		if _, err := os.Stat(j); err != nil {
			continue
		}
		if !hasFooter(p) {
			out = append(out, j)
		}
	}
	return out
}

// hasFooter reports whether the Parquet file at path opens: it exists and its footer reads.
func hasFooter(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	_, err = parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	return err == nil
}
