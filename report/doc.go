// Package report turns measured samples into tables and writes them for people and programs.
//
//  1. [Analyze] groups the samples of one or more runs ([metrics.Sample], read with
//     metrics.ReadRun) by scenario, arm and repetition (repetitions of different runs are kept
//     apart by run id). Per scenario×arm it adds up each repetition (requests, prompt, cached,
//     expected cached and re-read tokens, re-read tokens by segment kind, prefill time, cost),
//     takes their means with 95 % confidence intervals, compares each arm with the spec arm
//     repetition by repetition (ratio of means with Fieller's interval, paired difference with
//     its t interval), checks per run that the arms' prefill seconds per re-read token agree
//     within 2× ([PrefillCheck]; beyond it the run's prefill times are not comparable and the
//     writers show none), and checks the spec's own claims ([Claims]: the midnight cliff, and the
//     re-read tokens saved by sending reasoning back, split inside a turn and at a new user
//     message with the chat template's rule for each, judged as behaviour only on live sessions). [Summarize] is the pooled view (every
//     repetition summed into one row), kept inside the analysis.
//     [AnalyzeRuns] never pools runs of different setups (metrics.Setup, [GroupSetups]): each
//     setup gets an analysis of its own ([Analysis].Setups, [Analysis.Groups]), and a scenario
//     name with several contents is several scenarios ([ContentName]).
//     Each setup after the first is set beside the first as a server ([ServerComparison],
//     [Analysis].Servers) when the two match in what is measured: per server × arm the
//     figures side by side, and the requests whose re-read tokens differ with where each
//     server's cache diverged, summed per cause; otherwise the comparison says why not.
//     [Sessions] leaves out the sessions that did not complete (a failed request; the session
//     an interruption cut, from the manifest's complete: false) and [AnalyzeRuns] analyses
//     the rest, listing what it left out; report, compare and lab check --run all use it.
//     Requests whose expected cached tokens are unknown (metrics.Sample.ExpectedUnknown: cloud
//     APIs) are left out of the expected totals, the efficiency and the mismatches.
//  2. A [Report] bundles the analysis with the runs' manifests and the figures the caller
//     rendered ([Figure]: file names and SVG bytes; the package never draws charts or chooses
//     paths).
//  3. A [Writer] chosen by name with [Lookup] writes the report to an io.Writer: text,
//     markdown, csv, json, benchfmt (the Go benchmark format, for benchstat) or html (one
//     self-contained page, plots inline as SVG).
//  4. [Compare] sets two analyses side by side (an old run and a new one) and flags
//     regressions beyond a threshold and the confidence intervals.
//
// The package imports only the standard library and metrics. It never calls a server: a report
// can be rebuilt from the files of a run at any time.
package report
