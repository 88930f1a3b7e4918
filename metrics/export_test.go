package metrics

// CreateParquet creates a samples file at path and its journal ([JournalPath]) and returns a
// sink writing to both, as [CreatePart] does but at any path, part "1/1": for the tests of the
// sink and of the old layout's readers only (samples.parquet of results/<run-id>/). No
// production code writes the old layout. It fails if either file exists (fs.ErrExist).
func CreateParquet(path string, meta FileMeta) (*ParquetSink, error) {
	return createParquet(path, JournalPath(path), writerOptions(meta, Shard{}), false)
}
