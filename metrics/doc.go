// Package metrics is the lab's measurement schema and its storage: what one request measured, what
// a run was, and the files that keep both. It imports only the standard library and the Parquet
// library; it is the only package of the lab that imports Parquet.
//
// A run flows through it in four steps:
//
//  1. The harness measures one request and fills a [Sample]: its place in the run (scenario, arm,
//     repetition, request index), token counts (prompt, cached, expected cached), where the
//     prompt first diverged from the server's cache, and latencies in nanoseconds.
//  2. It hands the sample to a [Sink] as soon as it is measured: a [ParquetSink] writing
//     results/<run-id>/samples.parquet ([SamplesFile]) and, row by row, a crash-safe journal
//     beside it ([JournalFile]), and, for the end-of-run report or for tests, a [MemorySink].
//  3. After each session it writes a [Manifest] with [WriteManifest] to
//     results/<run-id>/manifest.json ([ManifestFile]), recording how the session ended
//     ([SessionRecord]); at the end (successful or not) it closes the sink, which writes the
//     Parquet footer and removes the journal, and writes the manifest a last time: versions,
//     server, start and end, whether the run completed.
//  4. Readers (lab report, lab plot, lab check) never call a server: they load a run with
//     [ReadRun], or the two files with [ReadManifest] and [ReadSamples] (which reads the journal
//     when a killed run left samples.parquet without its footer).
//
// The column names of [Sample] are a contract with every reader of old runs: the schema may be
// extended, never silently renamed. A missing measurement is null (a nil pointer), never 0.
package metrics
