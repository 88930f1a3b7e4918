// Package metrics is the lab's measurement schema and its storage: what one request measured, what
// a run was, and the files that keep both. It imports only the standard library and the Parquet
// library; it is the only package of the lab that imports Parquet.
//
// A run flows through it in four steps:
//
//  1. The harness measures one request and fills a [Sample]: its place in the run (scenario, arm,
//     repetition, request index), token counts (prompt, cached, expected cached), where the
//     prompt first diverged from the server's cache, and latencies in nanoseconds.
//  2. It hands the sample to a [Sink] as soon as it is measured: a [ParquetSink] made by
//     [CreatePart], writing the run's part file and, row by row, a crash-safe journal beside it
//     ([JournalPath]), and, for the end-of-run report or for tests, a [MemorySink].
//  3. After each session it writes the part's [Manifest] with [WriteManifest], recording how the
//     session ended ([SessionRecord]); at the end (successful or not) it closes the sink, which
//     writes the Parquet footer, gives the file its final name and removes the journal, and
//     writes the manifest a last time: versions, server, start and end, whether the part
//     completed. The manifest also says what the run measured with, its [Setup] (model file
//     digest, settings), each scenario's content digest, the [Host] and the user's tags;
//     [SetupDiff] names what differs between two runs' setups.
//  4. Readers (lab report, lab check, lab compare, a resume) never call a server: they load a run
//     folder with [ReadRun], which reads every part and merges their manifests ([MergeParts]),
//     or reads a folder of the old layout.
//
// # Layout: Hive-partitioned parts
//
// A run's folder is results/run_id=<run-id>/ ([RunDir]): a Hive partition with key run_id, so that
// DuckDB, Spark or Trino read every run with one glob, for example DuckDB's
// read_parquet('results/run_id=*/*.parquet', hive_partitioning = true). The rows also hold
// run_id as a column, always equal to the folder's value; with hive_partitioning DuckDB (checked
// with 1.5) gives one run_id column, VARCHAR, whose value is the folder's.
//
// A run is written in parts, one per shard (lab run --shard i/n; a run not split is shard 1/1),
// each with files of its own, numbered with 4 digits (more past 9999):
//
//	part-0002-of-0004.parquet             the shard's rows ([PartFile])
//	part-0002-of-0004.parquet.partial     the same while it is written ([PartialSuffix])
//	part-0002-of-0004.journal.jsonl       its journal, removed once the part file is whole
//	                                      (by Close, or by [RepairRun] after a kill)
//	manifest-0002-of-0004.json            the shard's manifest, Shard {2, 4} ([PartManifestFile])
//	requests-0002-of-0004.jsonl           request bodies, with --save-requests ([PartRequestsFile])
//	report.md, report.html, plots/        written by lab report over the parts present
//
// A part file gets its *.parquet name only once its footer is written, so a glob over *.parquet
// never meets a file a running or killed shard left without footer (DuckDB fails a whole query
// on one). Shards run on different machines write different names, so their run folders merge
// by copying them into one (cp -r host-*/results/run_id=sweep results/; only the report files
// collide, and lab report rewrites them). A run is complete when every shard 1 to n is present
// and complete; the merged manifest's error names the missing shards ("missing shards 2/4,
// 4/4") and each incomplete shard's error. Every part of a folder must be a shard of the same
// count and run id ([ReadParts] says which files disagree).
//
// The old layout, results/<run-id>/ with manifest.json, samples.parquet (and its journal
// samples.journal.jsonl) and requests.jsonl, as runs made before parts existed left it, is read
// by the same [ReadRun] ([LayoutSingle]), for reports and comparisons only: it is never written
// or resumed in place ([ErrOldLayout]). Old folders have no key=value in their path: a
// results/*/*.parquet glob with hive_partitioning over both layouts fails in DuckDB ("Hive
// partition mismatch"), which is why the glob above names run_id=*.
//
// Every part file is zstd-compressed in every column and says in its key/value metadata which
// run, lab version, schema version ([SchemaVersion]) and part it holds ([MetaRunID] and the other
// Meta keys).
//
// The column names of [Sample] are a contract with every reader of old runs: the schema may be
// extended, never silently renamed. A missing measurement is null (a nil pointer), never 0.
package metrics
