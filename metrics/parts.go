package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RunDirPrefix starts the name of a run folder in the part layout: results/run_id=<id>/, a Hive
// partition (key run_id), so that DuckDB, Spark or Trino read every run under results/ with one
// glob: read_parquet('results/*/*.parquet', hive_partitioning = true).
const RunDirPrefix = "run_id="

// RunDir returns the folder of the run id in the results folder: resultsDir/run_id=<id>.
func RunDir(resultsDir, runID string) string {
	return filepath.Join(resultsDir, RunDirPrefix+runID)
}

// Shard is one of Count disjoint parts of a run's matrix, Index 1 to Count; lab run --shard i/n
// runs part i of n. The zero Shard means the whole run, the same as 1/1 ([Shard.Norm]).
type Shard struct {
	// Index is the 1-based part, at most Count.
	Index int `json:"index"`
	// Count is the number of parts the run is split into.
	Count int `json:"count"`
}

// ParseShard parses "i/n" (1 ≤ i ≤ n, decimal integers) into a Shard. It returns an error naming
// the value and what is wanted for anything else ("0/3", "4/3", "a/b", "3").
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, ierr := strconv.Atoi(a)
	n, nerr := strconv.Atoi(b)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, such as 1/4 (part i of n, 1 ≤ i ≤ n)", v)
	}
	s := Shard{Index: i, Count: n}
	if err := s.Check(); err != nil {
		return Shard{}, err
	}
	return s, nil
}

// Check returns an error unless 1 ≤ Index ≤ Count (the zero Shard, the whole run, is valid).
func (s Shard) Check() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("shard %d/%d: want i/n with 1 ≤ i ≤ n", s.Index, s.Count)
	}
	return nil
}

// Norm returns s, or 1/1 for the zero Shard.
func (s Shard) Norm() Shard {
	if s == (Shard{}) {
		return Shard{Index: 1, Count: 1}
	}
	return s
}

// String returns "i/n" (the zero Shard is "1/1").
func (s Shard) String() string {
	s = s.Norm()
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has reports whether the session numbered k (0-based, in the matrix's run order) belongs to the
// shard: round robin, session k is in shard (k mod Count) + 1. The zero Shard has every session.
func (s Shard) Has(k int) bool {
	s = s.Norm()
	return k%s.Count == s.Index-1
}

// suffix is the shard's part of its file names: "0001-of-0004".
func (s Shard) suffix() string {
	s = s.Norm()
	return fmt.Sprintf("%04d-of-%04d", s.Index, s.Count)
}

// PartFile returns the name of the shard's samples file in a run folder of the part layout:
// part-0001-of-0004.parquet (numbers of 4 digits, or more past 9999). While the part is written
// the file is named [PartialSuffix] after it, and its journal ([JournalPath]) is
// part-0001-of-0004.journal.jsonl.
func PartFile(s Shard) string { return "part-" + s.suffix() + ".parquet" }

// PartManifestFile returns the name of the shard's manifest in a run folder of the part layout:
// manifest-0001-of-0004.json.
func PartManifestFile(s Shard) string { return "manifest-" + s.suffix() + ".json" }

// PartRequestsFile returns the name of the shard's request bodies (lab run --save-requests) in a
// run folder of the part layout: requests-0001-of-0004.jsonl.
func PartRequestsFile(s Shard) string { return "requests-" + s.suffix() + ".jsonl" }

// PartialSuffix is appended to a part's samples file while it is written; [ParquetSink.Close]
// renames the whole file to its final name. A glob over *.parquet therefore never meets a file
// without its footer (DuckDB fails a whole query on one: "No magic bytes found at end of file").
const PartialSuffix = ".partial"

// partManifestRE matches a part manifest's name and captures its index and count.
var partManifestRE = regexp.MustCompile(`^manifest-(\d+)-of-(\d+)\.json$`)

// CreatePart creates shard s's samples file in dir (a run folder of the part layout: [PartFile]
// with [PartialSuffix] until Close, and its journal) and returns a sink writing to both, the
// file zstd-compressed with meta and the part s in its key/value metadata. Close writes the
// footer and renames the file to [PartFile]. It fails if
// the part's samples file, its partial file or its journal already exists (errors.Is(err,
// fs.ErrExist)); dir must exist. Shards of one run written on different machines have distinct
// file names, so their folders merge by copying.
func CreatePart(dir string, s Shard, meta FileMeta) (*ParquetSink, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, PartFile(s))
	if _, err := os.Stat(final); err == nil {
		return nil, fmt.Errorf("create samples file: %s: %w", final, fs.ErrExist)
	}
	p, err := createParquet(final+PartialSuffix, JournalPath(final), writerOptions(meta, s), false)
	if err != nil {
		return nil, err
	}
	p.final = final
	return p, nil
}

// CreateJournalPart creates shard s's part in dir as [CreatePart] does (its partial file, its
// journal, the same errors), for a sink that writes rows for hours (lab proxy in front of an
// agent): its Write appends each row to the journal alone (the line handed to the operating
// system before Write returns, the journal synced every [RowGroupRows] rows, as CreatePart's
// sink does), and Close writes the Parquet file from the journal, [RowGroupRows] rows a row
// group, then gives it its final name and removes the journal, as CreatePart's Close does. The
// rows are as durable as CreatePart's and read the same way ([ReadPart]: the journal's until
// Close, the part file's after); what it saves is the Parquet writer's metadata of every row
// group written (a column chunk, statistics and page index per column: tens of KB a row group),
// which CreatePart's writer holds until Close writes the footer, so a sink made here holds the
// same memory after a million rows as after one. Close then holds that metadata while it writes
// the file, and takes time in proportion to the rows (each journal line decoded again).
func CreateJournalPart(dir string, s Shard, meta FileMeta) (*ParquetSink, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, PartFile(s))
	if _, err := os.Stat(final); err == nil {
		return nil, fmt.Errorf("create samples file: %s: %w", final, fs.ErrExist)
	}
	p, err := createParquet(final+PartialSuffix, JournalPath(final), writerOptions(meta, s), true)
	if err != nil {
		return nil, err
	}
	p.final = final
	return p, nil
}

// ReplacePart replaces shard s's samples in dir with a new part whose first rows are rows, for a
// resumed shard (meta as [CreatePart]). The kept rows go to the journal first (atomically), then
// the old part file (final or partial) is removed and a new partial file is written with rows
// in it; Close renames it to [PartFile]. Killed at any point, the part's rows read back
// ([ReadSamples]): the old file's until the journal is replaced, the kept rows and every new
// one after.
func ReplacePart(dir string, s Shard, rows []Sample, meta FileMeta) (*ParquetSink, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	final := filepath.Join(dir, PartFile(s))
	if err := writeJournal(JournalPath(final), rows); err != nil {
		return nil, err
	}
	if err := os.Remove(final); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replace samples file: %w", err)
	}
	if err := os.Remove(final + PartialSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replace samples file: %w", err)
	}
	p, err := reopenParquet(final+PartialSuffix, JournalPath(final), rows, writerOptions(meta, s))
	if err != nil {
		return nil, err
	}
	p.final = final
	return p, nil
}

// ReadPart reads shard s's samples in dir: [PartFile] when it reads, else the rows of its journal
// (a part killed before Close renamed it), with recovered true. A part with neither file has no
// rows (nil, false, an error wrapping fs.ErrNotExist).
func ReadPart(dir string, s Shard) (rows []Sample, recovered bool, err error) {
	return ReadSamples(filepath.Join(dir, PartFile(s)))
}

// Part is one shard of a run folder in the part layout, as [ReadParts] finds it.
type Part struct {
	// Shard is the part's place in the run.
	Shard Shard
	// Manifest is the part's manifest.
	Manifest *Manifest
}

// Layout names how a run folder keeps its files.
type Layout int

// The layouts of a run folder.
const (
	// LayoutNone: the folder holds no run (no manifest of either layout).
	LayoutNone Layout = iota
	// LayoutSingle: the layout of runs made before parts existed, results/<run-id>/ with
	// manifest.json ([ManifestFile]), samples.parquet ([SamplesFile]) and requests.jsonl.
	LayoutSingle
	// LayoutParts: results/run_id=<id>/ with one manifest-i-of-n.json, part-i-of-n.parquet (and
	// requests-i-of-n.jsonl) per shard.
	LayoutParts
)

// DetectLayout returns the layout of the run folder dir: [LayoutParts] when it holds a part
// manifest, [LayoutSingle] when it holds manifest.json, [LayoutNone] otherwise (a missing folder
// included). A folder holding both is an error: two runs copied into one folder.
func DetectLayout(dir string) (Layout, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return LayoutNone, nil
	}
	if err != nil {
		return LayoutNone, fmt.Errorf("read run folder: %w", err)
	}
	single, parts := false, false
	for _, e := range ents {
		switch {
		case e.Name() == ManifestFile && e.Type().IsRegular():
			single = true
		case partManifestRE.MatchString(e.Name()) && e.Type().IsRegular():
			parts = true
		}
	}
	switch {
	case single && parts:
		return LayoutNone, fmt.Errorf("run folder %s holds both %s and part manifests (%s): two layouts in one folder", dir, ManifestFile, PartManifestFile(Shard{1, 1}))
	case parts:
		return LayoutParts, nil
	case single:
		return LayoutSingle, nil
	}
	return LayoutNone, nil
}

// IsRunDir reports whether dir is a run folder of either layout.
func IsRunDir(dir string) bool {
	l, err := DetectLayout(dir)
	return err == nil && l != LayoutNone
}

// ReadParts reads the part manifests of the run folder dir, in shard order. Every part must name
// the same run id and be a shard of the same count (else the folder mixes runs, an error naming
// both files); a manifest whose shard disagrees with its file name is an error naming the file.
// It returns an error wrapping fs.ErrNotExist when dir has no part manifest.
func ReadParts(dir string) ([]Part, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read run folder: %w", err)
	}
	var parts []Part
	var first string
	for _, e := range ents {
		m := partManifestRE.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		s := Shard{Index: i, Count: n}
		path := filepath.Join(dir, e.Name())
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		man, err := ReadManifest(path)
		if err != nil {
			return nil, err
		}
		if man.Shard != nil && man.Shard.Norm() != s {
			return nil, fmt.Errorf("%s: the manifest says shard %s, its name %s", path, man.Shard, s)
		}
		if len(parts) > 0 {
			p0 := parts[0]
			if s.Count != p0.Shard.Count {
				return nil, fmt.Errorf("%s and %s: shards of %d and of %d parts in one run folder: a run is split one way", first, path, p0.Shard.Count, s.Count)
			}
			if man.RunID != p0.Manifest.RunID {
				return nil, fmt.Errorf("%s and %s: run ids %q and %q in one run folder", first, path, p0.Manifest.RunID, man.RunID)
			}
			if d := matrixDiff(p0.Manifest, man); d != "" {
				return nil, fmt.Errorf("%s and %s: shards of different matrices in one run folder (%s): every shard of a run must be run with the same scenarios, arms, repetitions, backend, model, driver and setup", first, path, d)
			}
		} else {
			first = path
		}
		parts = append(parts, Part{Shard: s, Manifest: man})
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("read run %s: no part manifest (%s): %w", dir, PartManifestFile(Shard{1, 1}), fs.ErrNotExist)
	}
	slices.SortFunc(parts, func(a, b Part) int { return a.Shard.Index - b.Shard.Index })
	return parts, nil
}

// matrixDiff names what differs between two parts' matrices ("repetitions 1 and 2"), "" when
// they agree: the scenarios, arms and repetitions that number the sessions ([Shard.Has] deals
// session k of the matrix), and the backend, model, driver, num_ctx and warm start that
// measured them, and, where
// both parts recorded them, the model file's digest, each scenario's content digest and the
// each arm's definition ([Manifest.ArmDigests]) and the other [SetupSettings]. Lab, server versions, URLs and hosts may differ between machines.
func matrixDiff(a, b *Manifest) string {
	var d []string
	if !slices.Equal(a.Scenarios, b.Scenarios) {
		d = append(d, fmt.Sprintf("scenarios %v and %v", a.Scenarios, b.Scenarios))
	}
	if !slices.Equal(a.Arms, b.Arms) {
		d = append(d, fmt.Sprintf("arms %v and %v", a.Arms, b.Arms))
	}
	if a.Repetitions != b.Repetitions {
		d = append(d, fmt.Sprintf("repetitions %d and %d", a.Repetitions, b.Repetitions))
	}
	if a.Backend != b.Backend {
		d = append(d, fmt.Sprintf("backend %q and %q", a.Backend, b.Backend))
	}
	if a.Model != b.Model {
		d = append(d, fmt.Sprintf("model %q and %q", a.Model, b.Model))
	}
	if a.Settings["driver"] != b.Settings["driver"] {
		d = append(d, fmt.Sprintf("driver %q and %q", a.Settings["driver"], b.Settings["driver"]))
	}
	// The context window and a warm start (lab run --num-ctx, --warm) are part of the setup: a
	// run whose shards differ in them would pool two setups as one.
	if a.NumCtx != b.NumCtx {
		d = append(d, fmt.Sprintf("num_ctx %d and %d", a.NumCtx, b.NumCtx))
	}
	if wa, wb := a.CacheState == CacheWarm, b.CacheState == CacheWarm; wa != wb {
		d = append(d, fmt.Sprintf("warm %v and %v (lab run --warm)", wa, wb))
	}
	// The rest of the setup, where both parts recorded it (a part written by an older lab
	// records no digests; a server the lab did not start has no flash-attention setting).
	if a.ModelDigest != "" && b.ModelDigest != "" && a.ModelDigest != b.ModelDigest {
		d = append(d, fmt.Sprintf("model file digest %s and %s", a.ModelDigest, b.ModelDigest))
	}
	for _, sc := range a.Scenarios {
		if x, y := a.ScenarioDigests[sc], b.ScenarioDigests[sc]; x != "" && y != "" && x != y {
			d = append(d, fmt.Sprintf("scenario %s content %s and %s", sc, x, y))
		}
	}
	da, db := a.ArmDigests(), b.ArmDigests()
	for _, arm := range a.Arms {
		if x, y := da[arm], db[arm]; x != "" && y != "" && x != y {
			d = append(d, fmt.Sprintf("arm %s definition %s and %s", arm, ShortDigest(x), ShortDigest(y)))
		}
	}
	for _, k := range SetupSettings {
		x, okx := a.Settings[k]
		y, oky := b.Settings[k]
		if k != "driver" && okx && oky && x != y {
			d = append(d, fmt.Sprintf("%s %q and %q", k, x, y))
		}
	}
	return strings.Join(d, "; ")
}

// MergeParts merges the manifests of a run's parts (in shard order, as [ReadParts] returns them)
// into one manifest of the whole run:
//
//   - what the run is (run id, scenarios, arms, repetitions, backend, model, num_ctx, settings)
//     from the first part; lab version, server version and server URL, which may differ between
//     machines, as the distinct values joined by ", ";
//   - started_at the earliest, ended_at the latest when every part ended (else zero);
//   - samples the sum; sessions and repairs the parts' records, shard after shard;
//   - host the parts' machine when they agree, else the distinct CPU models joined
//     ([Host]); tags the union, a key the parts give different values joined by ", ";
//   - cache_state the parts' state when they agree, else the worst (cold-failed, uncontrolled,
//     warm, cold-unverified, cold-verified, in that order);
//   - complete when every shard 1 to n is present and complete; error naming the missing shards
//     ("missing shards 2/4, 4/4") and each incomplete shard's error ("shard 3/4: …");
//   - shard nil (the merged manifest is the whole run).
//
// It returns nil for no parts.
func MergeParts(parts []Part) *Manifest {
	if len(parts) == 0 {
		return nil
	}
	m := *parts[0].Manifest
	m.Shard = nil
	m.Sessions = nil
	m.Repairs = nil
	m.Samples = 0
	m.Error = ""
	n := parts[0].Shard.Count
	present := map[int]bool{}
	var labV, srvV, srvURL, states, errs []string
	ended := true
	m.Complete = true
	for _, p := range parts {
		pm := p.Manifest
		present[p.Shard.Index] = true
		labV = appendNew(labV, pm.LabVersion)
		srvV = appendNew(srvV, pm.ServerVersion)
		srvURL = appendNew(srvURL, pm.ServerURL)
		states = appendNew(states, pm.CacheState)
		if !pm.StartedAt.IsZero() && (m.StartedAt.IsZero() || pm.StartedAt.Before(m.StartedAt)) {
			m.StartedAt = pm.StartedAt
		}
		if pm.EndedAt.IsZero() {
			ended = false
		} else if pm.EndedAt.After(m.EndedAt) {
			m.EndedAt = pm.EndedAt
		}
		m.Samples += pm.Samples
		m.Sessions = append(m.Sessions, pm.Sessions...)
		m.Repairs = append(m.Repairs, pm.Repairs...)
		if !pm.Complete {
			m.Complete = false
			e := pm.Error
			if e == "" {
				e = "incomplete"
			}
			errs = append(errs, fmt.Sprintf("shard %s: %s", p.Shard, e))
		}
	}
	if !ended {
		m.EndedAt = time.Time{}
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if !present[i] {
			missing = append(missing, Shard{Index: i, Count: n}.String())
		}
	}
	if len(missing) > 0 {
		m.Complete = false
		word := "shard"
		if len(missing) > 1 {
			word = "shards"
		}
		errs = append([]string{fmt.Sprintf("missing %s %s", word, strings.Join(missing, ", "))}, errs...)
	}
	m.Error = strings.Join(errs, "; ")
	m.LabVersion = strings.Join(labV, ", ")
	m.ServerVersion = strings.Join(srvV, ", ")
	m.ServerURL = strings.Join(srvURL, ", ")
	m.CacheState = worstCacheState(states)
	m.Host = mergeHosts(parts)
	m.Tags = mergeTags(parts)
	return &m
}

// MissingShards returns the shards 1 to n of the parts' count that parts lacks, in order.
func MissingShards(parts []Part) []Shard {
	if len(parts) == 0 {
		return nil
	}
	n := parts[0].Shard.Count
	have := map[int]bool{}
	for _, p := range parts {
		have[p.Shard.Index] = true
	}
	var out []Shard
	for i := 1; i <= n; i++ {
		if !have[i] {
			out = append(out, Shard{Index: i, Count: n})
		}
	}
	return out
}

// mergeTags returns the union of the parts' tags; a key the parts give different values has
// them joined by ", " in shard order. nil when no part has tags.
func mergeTags(parts []Part) map[string]string {
	var out map[string]string
	vals := map[string][]string{}
	for _, p := range parts {
		for k, v := range p.Manifest.Tags {
			if out == nil {
				out = map[string]string{}
			}
			vals[k] = appendNew(vals[k], v)
			out[k] = strings.Join(vals[k], ", ")
		}
	}
	return out
}

func appendNew(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// worstCacheState returns the one state of states, or the worst of several (see [MergeParts]).
func worstCacheState(states []string) string {
	if len(states) <= 1 {
		if len(states) == 1 {
			return states[0]
		}
		return ""
	}
	for _, s := range []string{CacheColdFailed, CacheUncontrolled, CacheWarm, CacheColdUnverified, CacheColdVerified} {
		if slices.Contains(states, s) {
			return s
		}
	}
	return states[0]
}

// ReadRunManifest reads the manifest of the run folder dir in either layout: manifest.json, or
// the part manifests merged ([MergeParts]). It returns an error wrapping fs.ErrNotExist when dir
// holds no run.
func ReadRunManifest(dir string) (*Manifest, error) {
	l, err := DetectLayout(dir)
	if err != nil {
		return nil, err
	}
	switch l {
	case LayoutSingle:
		return ReadManifest(filepath.Join(dir, ManifestFile))
	case LayoutParts:
		parts, err := ReadParts(dir)
		if err != nil {
			return nil, err
		}
		return MergeParts(parts), nil
	}
	return nil, fmt.Errorf("read run %s: no %s and no part manifest (%s): %w", dir, ManifestFile, PartManifestFile(Shard{1, 1}), fs.ErrNotExist)
}

// ReadResumeManifest returns the manifest of the part of the run folder dir that lab run
// --resume carries on: shard s's manifest, or with a zero s the run's only part manifest (a run
// split into several shards needs s: the error names the incomplete ones). A run of the old
// layout is not resumed: its error wraps [ErrOldLayout], naming the folder and what to do. It
// returns an error wrapping fs.ErrNotExist when dir holds no run or not that shard.
func ReadResumeManifest(dir string, s Shard) (*Manifest, error) {
	l, err := DetectLayout(dir)
	if err != nil {
		return nil, err
	}
	switch l {
	case LayoutSingle:
		return nil, oldLayoutError(dir)
	case LayoutNone:
		return nil, fmt.Errorf("read run %s: no %s and no part manifest: %w", dir, ManifestFile, fs.ErrNotExist)
	}
	if s != (Shard{}) {
		m, err := ReadManifest(filepath.Join(dir, PartManifestFile(s)))
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	parts, err := ReadParts(dir)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].Shard.Count == 1 {
		return parts[0].Manifest, nil
	}
	var open []string
	for _, p := range parts {
		if !p.Manifest.Complete {
			open = append(open, p.Shard.String())
		}
	}
	for _, ms := range MissingShards(parts) {
		open = append(open, ms.String()+" (missing)")
	}
	return nil, fmt.Errorf("%s is split into %d shards: name the one to resume with --shard i/n (not complete: %s)", dir, parts[0].Shard.Count, strings.Join(open, ", "))
}

// ReadRun reads the run folder dir in either layout and returns its manifest and samples.
//
// Part layout (results/run_id=<id>/): every part manifest, merged ([MergeParts]: complete only
// when every shard 1 to n is present and complete, the error naming missing shards), and every
// part's rows in shard order ([ReadPart]: the part file, or its journal when a killed part left
// none). A part whose manifest exists but that has neither samples file nor journal (a shard
// killed before its first row, or one with no session) has no rows.
//
// Old layout (results/<id>/): manifest.json and [ReadSamples] of samples.parquet (or its journal).
//
// If the manifest reads but the samples do not, it returns the manifest with the error, so the
// caller can still say what the run was. When journals it read had lines that hold no sample, it
// returns the manifest, every row it kept and a [*JournalError] (errors.As) naming each line
// lost: the caller decides whether rows kept are enough (lab report: yes, and it says so).
//
// ReadRun is [AppendRun] to no rows.
func ReadRun(dir string) (*Manifest, []Sample, error) {
	return AppendRun(nil, dir)
}

// AppendRun reads the run folder dir as [ReadRun] does and appends its rows to dst, returning the
// extended slice: several runs read into one slice copy no row. Rows are read as a stream, a
// Parquet file one row group at a time into a reused buffer and a journal line by line, so that
// reading holds no more than the rows kept and one batch; the string columns whose values repeat
// (run id, scenario, arm, backend, model, server version, kind, cached source, divergence segment,
// driver, end reason, usage fields) share one copy of each value per call. Each part's footer is
// read once; [Manifest].RowsRead names the journals rows were read from. Errors are ReadRun's,
// with dst as far as it was filled.
func AppendRun(dst []Sample, dir string) (*Manifest, []Sample, error) {
	m, err := appendRun(dir, rowSink{
		n:   func() int { return len(dst) },
		to:  func() rowsTo { return collect(&dst) },
		cut: func(n int) { clear(dst[n:]); dst = dst[:n] },
	})
	return m, dst, err
}

// AppendRunRows reads the run folder dir as [AppendRun] does and appends its rows to dst, holding
// only the columns a [Rows] holds: each row is converted as it is read, from the reused batch
// buffer of the Parquet reader, so that no [Sample] per row is kept. Errors are AppendRun's, with
// dst as far as it was filled.
func AppendRunRows(dst *Rows, dir string) (*Manifest, error) {
	return appendRun(dir, rowSink{
		n: dst.Len,
		to: func() rowsTo {
			start := dst.Len()
			return rowsTo{
				add:   func(s *Sample) error { dst.Append(s); return nil },
				grow:  func(n int64) { dst.Grow(int(min(n, 1<<32))) },
				reset: func() { dst.Truncate(start) },
			}
		},
		cut: dst.Truncate,
	})
}

// rowSink is where appendRun puts the rows it reads: n says how many it holds, to returns the
// rowsTo of one file, cut drops every row from the n-th on.
type rowSink struct {
	n   func() int
	to  func() rowsTo
	cut func(n int)
}

// appendRun is [AppendRun] into sink.
func appendRun(dir string, sink rowSink) (*Manifest, error) {
	in := interner{}
	l, err := DetectLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	if l != LayoutParts {
		m, err := ReadManifest(filepath.Join(dir, ManifestFile))
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", dir, err)
		}
		start := sink.n()
		path := filepath.Join(dir, SamplesFile)
		recovered, inUse, err := scanSamples(path, in, sink.to())
		var je *JournalError
		if err != nil && !errors.As(err, &je) {
			sink.cut(start)
			return m, fmt.Errorf("read run %s: %w", dir, err)
		}
		n := sink.n() - start
		m.RowsRead = &RowsRead{Rows: n}
		m.RowsRead.count(n, recovered, inUse, JournalPath(path), je)
		if je != nil {
			return m, fmt.Errorf("read run %s: %w", dir, je)
		}
		return m, nil
	}
	parts, err := ReadParts(dir)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	var lost []*JournalError
	read := &RowsRead{}
	total := 0
	for _, p := range parts {
		start := sink.n()
		to := sink.to()
		var fill *sessionsFromRows
		if p.Manifest.SessionsFromRows && len(p.Manifest.Sessions) == 0 {
			fill = newSessionsFromRows()
			add := to.add
			to.add = func(s *Sample) error { fill.add(s); return add(s) }
			reset := to.reset
			to.reset = func() { fill = newSessionsFromRows(); reset() }
		}
		path := filepath.Join(dir, PartFile(p.Shard))
		recovered, inUse, err := scanSamples(path, in, to)
		var je *JournalError
		switch {
		case errors.As(err, &je):
			lost = append(lost, je)
		case errors.Is(err, fs.ErrNotExist):
			// Neither part file nor journal: the part wrote no row.
			continue
		case err != nil:
			sink.cut(start)
			return MergeParts(parts), fmt.Errorf("read run %s: shard %s: %w", dir, p.Shard, err)
		}
		n := sink.n() - start
		if fill != nil {
			fill.fill(p.Manifest, n)
		}
		read.count(n, recovered, inUse, JournalPath(path), je)
		total += n
	}
	m := MergeParts(parts)
	read.Rows = total
	m.RowsRead = read
	if je := joinJournalErrors(lost); je != nil {
		return m, fmt.Errorf("read run %s: %w", dir, je)
	}
	return m, nil
}

// RowsRead says where the rows [ReadRun] returned came from, so that a reader does not take the
// manifest's [Manifest].Samples (written as each session ends: behind the rows after a kill) for
// the number of rows.
type RowsRead struct {
	// Rows is the number of rows read, from closed samples files and journals.
	Rows int
	// Journal is how many of Rows came from journals (samples files a kill left unclosed); 0
	// when every row came from a closed file.
	Journal int
	// Lost is the number of journal lines that held no sample ([BadLine]): rows lost. The
	// journals held Journal + Lost lines.
	Lost int
	// Journals are the paths of the journals rows were read from (parts whose samples file is
	// missing or has no readable footer: a killed run's), in the order read; nil when none.
	Journals []string
	// InUse are the journals of Journals that a running lab process still wrote when they were
	// read ([JournalInUse]), in the same order; nil when none.
	InUse []string
}

// count adds to r what one read of a samples file returned: n rows, from its journal at jpath
// when recovered (inUse: a running sink still writes it), and the journal lines je names as lost
// (nil: none).
func (r *RowsRead) count(n int, recovered, inUse bool, jpath string, je *JournalError) {
	if recovered {
		r.Journal += n
		r.Journals = append(r.Journals, jpath)
		if inUse {
			r.InUse = append(r.InUse, jpath)
		}
	}
	if je != nil {
		r.Lost += len(je.Bad)
	}
}

// sessionsFromRows builds, row by row, the session records of a part whose sessions are its
// rows' ([Manifest].SessionsFromRows).
type sessionsFromRows struct {
	by       map[[3]string]*rowSession
	order    []*rowSession
	scenario []string
	backends []string
	model    string
}

type rowSession struct {
	rec  SessionRecord
	last int32
}

func newSessionsFromRows() *sessionsFromRows {
	return &sessionsFromRows{by: map[[3]string]*rowSession{}}
}

// add counts one row.
func (f *sessionsFromRows) add(s *Sample) {
	k := [3]string{s.Scenario, s.Arm, strconv.Itoa(int(s.Repetition))}
	se := f.by[k]
	if se == nil {
		se = &rowSession{rec: SessionRecord{Scenario: s.Scenario, Arm: s.Arm, Repetition: int(s.Repetition)}, last: -1}
		f.by[k] = se
		f.order = append(f.order, se)
		f.scenario = appendNew(f.scenario, s.Scenario)
	}
	se.rec.Requests++
	if s.RequestIndex >= se.last {
		se.last = s.RequestIndex
		se.rec.Complete, se.rec.Error = s.Error == "", ""
		if s.Error != "" {
			se.rec.Error = "its last request failed"
		}
	}
	if f.model == "" {
		f.model = s.Model
	}
	f.backends = appendNew(f.backends, s.Backend)
}

// fill gives m the records, scenarios, samples, model and backend of the n rows added.
func (f *sessionsFromRows) fill(m *Manifest, n int) {
	for _, sc := range f.scenario {
		m.Scenarios = appendNew(m.Scenarios, sc)
	}
	if m.Model == "" {
		m.Model = f.model
	}
	for _, se := range f.order {
		m.Sessions = append(m.Sessions, se.rec)
	}
	if len(f.backends) == 1 {
		m.Backend = f.backends[0]
	}
	m.Samples = max(m.Samples, n)
}
