// Package report turns measured samples into tables and writes them for people.
//
//  1. [Summarize] groups the samples of a run ([metrics.Sample], read with metrics.ReadRun) by
//     scenario and arm and adds them up into one [ScenarioTable] per scenario: requests, prompt
//     tokens, cached and expected cached tokens, re-read tokens, prefill time, the server's cache
//     efficiency and each arm's re-read tokens relative to the spec arm's.
//  2. [Markdown] writes report.md from the run's manifest, the tables and the names of the plot
//     files the caller wrote, to an io.Writer; it chooses no path.
//
// The package imports only the standard library and metrics. It never calls a server: a report
// can be rebuilt from the files of a run at any time.
package report
