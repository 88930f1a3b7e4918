package metrics

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The files of a run folder of the old layout, results/<run-id>/ ([LayoutSingle]); runs are now
// written in parts, results/run_id=<id>/part-0001-of-0001.parquet ([PartFile],
// [PartManifestFile]). Readers read both.
const (
	// ManifestFile is the name of the run's [Manifest], JSON, in the old layout.
	ManifestFile = "manifest.json"
	// SamplesFile is the name of the run's samples, Parquet, one [Sample] per row, in the old
	// layout.
	SamplesFile = "samples.parquet"
	// JournalFile is the name of the samples journal a [ParquetSink] keeps beside SamplesFile
	// while the run writes it: one JSON line per sample, removed once samples.parquet is closed.
	JournalFile = "samples.journal.jsonl"
)

// Manifest describes one run, or one part of it: what was run, against which server, when, and
// whether it completed. It is stored as indented JSON with snake_case keys, one per part
// (manifest-0001-of-0004.json, [PartManifestFile]; manifest.json in the old layout).
type Manifest struct {
	// LabVersion is the version of the lab that made the run (from its build info).
	LabVersion string `json:"lab_version"`
	// RunID identifies the run; it names the folder results/run_id=<run-id>/ ([RunDir]).
	RunID string `json:"run_id"`
	// Shard is the part of the run this manifest describes (lab run --shard i/n; 1/1 for a run
	// not split); nil (omitted) in the old layout and in a manifest merged from parts
	// ([MergeParts]), which describes the whole run.
	Shard *Shard `json:"shard,omitempty"`
	// Scenarios are the names of the scenarios run, in the order they ran.
	Scenarios []string `json:"scenarios"`
	// Arms are the names of the arms run, in the order they ran.
	Arms []string `json:"arms"`
	// ArmDefinitions are the arms' definitions, in the order of Arms: each arm's JSON as package
	// arms writes it (name, description, base, measures on, practices with every parameter,
	// source: "built-in" or the arm file's FILE:LINE). Omitted by runs made before arms were data.
	ArmDefinitions []json.RawMessage `json:"arm_definitions,omitempty"`
	// Repetitions is how many times each scenario×arm pair was run.
	Repetitions int `json:"repetitions"`
	// Backend is the wire protocol's name, for example "ollama".
	Backend string `json:"backend"`
	// Model is the served model's name.
	Model string `json:"model"`
	// ServerVersion is the model server's version as it reported it; "" when unknown.
	ServerVersion string `json:"server_version"`
	// ServerURL is the base URL of the model server.
	ServerURL string `json:"server_url"`
	// NumCtx is the context window the run pinned, in tokens; 0 when the backend has none.
	NumCtx int `json:"num_ctx"`
	// StartedAt is when the run started.
	StartedAt time.Time `json:"started_at"`
	// EndedAt is when the run ended; the zero time (omitted) while it runs or if it died.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Complete is true when every planned request was sent and the sample file was closed.
	Complete bool `json:"complete"`
	// Samples is the number of rows written to the samples file (the part's, or samples.parquet).
	// It is written as each session ends: a run killed during a session holds more rows
	// (RowsRead says how many were read).
	Samples int `json:"samples"`
	// RowsRead is set by [ReadRun] (never written to the file): how many rows it read, and how
	// many of them from journals; nil for a manifest read otherwise.
	RowsRead *RowsRead `json:"-"`
	// Error is the error that ended the run early; "" (omitted) when none did.
	Error string `json:"error,omitempty"`
	// CacheState says how the run controlled the server's prompt cache at the start of each
	// session: one of [CacheColdVerified], [CacheColdUnverified], [CacheColdFailed], [CacheWarm],
	// [CacheUncontrolled]; "" in runs made before the field existed.
	CacheState string `json:"cache_state,omitempty"`
	// Settings are other settings of the run worth recording (flags, keep_alive, seeds), by name.
	Settings map[string]string `json:"settings,omitempty"`
	// Sessions records each session (scenario × arm × repetition) as it ended, in the order they
	// ended: the manifest is written again after each one. A session of the run's rows without a
	// record did not end (the run was interrupted or killed during it). Empty (omitted) in runs
	// made before the field existed, and until the run's first session ended; readers then
	// judge sessions by their rows.
	Sessions []SessionRecord `json:"sessions,omitempty"`
	// SessionsFromRows marks a part whose sessions are read from its rows while the manifest
	// holds none (lab proxy's capture, which writes its manifest at the start and at Close
	// only, never per row): [ReadRun] then gives the part one record per scenario of its rows,
	// in order of first appearance, counting its rows, complete unless its last row (highest
	// request_index) has an error, and sets scenarios, samples and an empty model from the
	// rows, and backend to the rows' one backend when they share one. A capture killed before
	// Close so reads as it would have closed.
	SessionsFromRows bool `json:"sessions_from_rows,omitempty"`
	// ModelDigest is "sha256:<hex>", the SHA-256 of the model file the server serves (the GGUF
	// of lab run --gguf, or the synthetic model the lab wrote), when the lab knows the file; ""
	// (omitted) when it does not, and in runs made before the field existed: unknown. Part of
	// the run's [Setup].
	ModelDigest string `json:"model_digest,omitempty"`
	// ScenarioDigests maps each scenario's name to the digest of its content,
	// "sha256:<hex>" over the scenario file, its workspace archive, the prompts it uses and
	// loop.json (scenario.Scenario.Digest gives the canonical order). A scenario without an
	// entry (a run made before the field existed) has unknown content. A scenario named the
	// same with another digest is another scenario: reports never pool the two.
	ScenarioDigests map[string]string `json:"scenario_digests,omitempty"`
	// RecordedAnswers maps each scenario some of whose tool calls replay a recorded answer
	// (an imported session's, scenario.yaml `answer:`) to those steps, in order: their rows
	// carry results the session recorded, not results the harness computed. Omitted when no
	// scenario of the run has one, and in runs made before the field existed.
	RecordedAnswers map[string][]RecordedStep `json:"recorded_answers,omitempty"`
	// Host is the machine the run (or this part of it) ran on; nil (omitted) in runs made
	// before the field existed. Not part of the [Setup]: shards of one run may run on several
	// machines. It says why a prefill time looks odd.
	Host *Host `json:"host,omitempty"`
	// Tags are the user's labels of the run (lab run --tag key=value), by key; shown in the
	// report's header, not part of the [Setup].
	Tags map[string]string `json:"tags,omitempty"`
	// Repairs records each time lab repair ([RepairRun]) wrote the part's samples file from its
	// journal, in the order they happened; empty (omitted) for a part its run closed itself. A
	// manifest merged from parts ([MergeParts]) holds every part's records, shard after shard.
	Repairs []RepairRecord `json:"repairs,omitempty"`
}

// RecordedStep is an assistant step whose calls replay recorded answers, in
// [Manifest].RecordedAnswers: its turn and step as the rows' columns number them, and how many
// of its calls replay one.
type RecordedStep struct {
	Turn  int `json:"turn"`
	Step  int `json:"step"`
	Calls int `json:"calls"`
}

// RepairRecord is one repair of a part, in [Manifest].Repairs: lab repair wrote the part's
// samples file from the rows of its journal, which a run killed before closing it left.
type RepairRecord struct {
	// Part is the part repaired, "i/n" ([Shard.String]; "1/1" in the old layout).
	Part string `json:"part"`
	// At is when the repaired file was written (UTC).
	At time.Time `json:"at"`
	// LabVersion is the version of the lab that repaired it.
	LabVersion string `json:"lab_version"`
	// From is the journal's file name.
	From string `json:"from"`
	// Rows is the number of rows written: every line of the journal that held a sample.
	Rows int `json:"rows"`
	// LostLines is the number of journal lines that held no sample (cut short by the kill, or
	// corrupt), skipped; their rows are lost.
	LostLines int `json:"lost_lines"`
}

// SessionRecord is how one session of a run ended, in [Manifest].Sessions.
type SessionRecord struct {
	// Scenario, Arm and Repetition (1-based) name the session, as the rows' columns do.
	Scenario   string `json:"scenario"`
	Arm        string `json:"arm"`
	Repetition int    `json:"repetition"`
	// Requests is the number of rows the session wrote.
	Requests int `json:"requests"`
	// Complete is true when the session ended without an error: its rows are a whole session
	// (a live turn that reached its time limit ends normally, its row's end_reason "timeout").
	Complete bool `json:"complete"`
	// Error is the error that ended the session early; "" (omitted) when it completed.
	Error string `json:"error,omitempty"`
}

// The values of [Manifest].CacheState. A session starts cold when the lab emptied the server's
// cache (Ollama: the model unloaded; llama-server: its slots erased) or put a per-run nonce first
// in the prompt (cloud APIs, whose caches cannot be emptied). The probe that verifies it is the
// session's first request: its cached tokens must be 0.
const (
	// CacheColdVerified: every session started cold and its first request reported 0 cached tokens.
	CacheColdVerified = "cold-verified"
	// CacheColdUnverified: every session started cold, but some first request's cached count was
	// unknown.
	CacheColdUnverified = "cold-unverified"
	// CacheColdFailed: the lab tried to start cold, but some session's first request reported
	// cached tokens (another client on the server, or a cache the reset did not reach).
	CacheColdFailed = "cold-failed"
	// CacheWarm: the run kept the cache as it found it (lab run --warm).
	CacheWarm = "warm"
	// CacheUncontrolled: the backend can neither empty the cache nor was a nonce used.
	CacheUncontrolled = "uncontrolled"
)

// WriteManifest writes m to path as indented JSON, atomically: it writes a temporary file in
// the same directory, syncs it and renames it over path, so readers see the old file or the new
// one, never a part.
func WriteManifest(path string, m *Manifest) error { return writeManifest(path, m, WriteFileAtomic) }

// writeManifest writes m to path as indented JSON with replace ([WriteFileAtomic], or
// replaceFile for a manifest written again before long).
func writeManifest(path string, m *Manifest, replace func(string, func(io.Writer) error) error) error {
	if m == nil {
		return errors.New("write manifest: nil manifest")
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	data = append(data, '\n')
	return replace(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// ReadManifest reads the manifest at path. Unknown keys (from a newer lab) are ignored; a
// missing key leaves its field at the zero value. A manifest that is not JSON, or holds a field
// of the wrong type, is an error naming the file and line ("decode manifest path:3: …"; the
// decoder's error names the field).
func ReadManifest(path string) (*Manifest, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		// Name the line of the byte the decoder stopped at: a syntax error's, or a field's of
		// the wrong type (whose name the decoder's error gives).
		var off int64 = -1
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		if off >= 0 {
			line := 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
			return nil, fmt.Errorf("decode manifest %s:%d: %w", path, line, err)
		}
		return nil, fmt.Errorf("decode manifest %s: %w", path, err)
	}
	return &m, nil
}

// ArmDigests returns, per arm name, "sha256:<hex>" over the arm's definition in
// [Manifest.ArmDefinitions] without the keys that do not change what is measured (source, the
// file and line of its name; description; base and switched, how the file wrote the measures,
// whose effect measures_on lists), as compact JSON with sorted keys. Two runs whose
// digests differ for one arm name measured two arms under that name. An arm without a
// definition (a run made before they were recorded, or a definition that is not a JSON object)
// is missing from the map: unknown.
func (m *Manifest) ArmDigests() map[string]string {
	out := map[string]string{}
	if len(m.ArmDefinitions) != len(m.Arms) {
		return out
	}
	for i, raw := range m.ArmDefinitions {
		var def map[string]any
		if err := json.Unmarshal(raw, &def); err != nil || def == nil {
			continue
		}
		// What runs is the measures on and the practices: how the file wrote the measures
		// (a base and its switches, one that switches nothing included) is not.
		for _, k := range []string{"source", "description", "base", "switched"} {
			delete(def, k)
		}
		b, err := json.Marshal(def)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(b)
		out[m.Arms[i]] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out
}
