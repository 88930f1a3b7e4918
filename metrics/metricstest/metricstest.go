// Package metricstest writes run folders of the old layout (results/<run-id>/ with
// manifest.json and samples.parquet, [metrics.LayoutSingle]) as fixtures for tests of the
// readers: lab report, lab compare and lab check --run read that layout, and nothing in the
// lab's production code writes it any more (it is read only, [metrics.ErrOldLayout]); and the
// fixtures the metrics, report and lab tests share: a manifest ([Manifest]) and a killed run's
// files copied ([CopyRun]). Import it from _test.go files only.
package metricstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"lab/metrics"
)

// WriteOldSamples writes rows as the whole samples file of the old-layout run folder dir,
// dir/samples.parquet ([metrics.SamplesFile]), with meta in its key/value metadata and part
// "1/1", as the lab wrote it before parts existed. The file is written as a part
// ([metrics.CreatePart], the same writer, columns and metadata) and renamed; dir must exist and
// hold neither samples.parquet nor a part 1 of 1.
func WriteOldSamples(dir string, meta metrics.FileMeta, rows []metrics.Sample) error {
	one := metrics.Shard{Index: 1, Count: 1}
	sink, err := metrics.CreatePart(dir, one, meta)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := sink.Write(&rows[i]); err != nil {
			sink.Close()
			return err
		}
	}
	if err := sink.Close(); err != nil {
		return err
	}
	dst := filepath.Join(dir, metrics.SamplesFile)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("write %s: it exists", dst)
	}
	return os.Rename(filepath.Join(dir, metrics.PartFile(one)), dst)
}

// WriteKilledOldSamples writes the old-layout run folder dir as a run killed before it closed
// its samples file left it: samples.parquet holding only Parquet's leading magic "PAR1" (no
// footer, unreadable) and its journal samples.journal.jsonl ([metrics.JournalFile]) holding
// rows, one JSON object a line, as [metrics.ParquetSink] writes them. dir must exist.
func WriteKilledOldSamples(dir string, rows []metrics.Sample) error {
	if err := os.WriteFile(filepath.Join(dir, metrics.SamplesFile), []byte("PAR1"), 0o644); err != nil {
		return err
	}
	var b []byte
	for i := range rows {
		s := rows[i]
		s.StartedAt = s.StartedAt.UTC()
		line, err := json.Marshal(&s)
		if err != nil {
			return fmt.Errorf("encode sample %d: %w", i, err)
		}
		b = append(append(b, line...), '\n')
	}
	return os.WriteFile(filepath.Join(dir, metrics.JournalFile), b, 0o644)
}
