package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// SetupSettings are the manifest settings ([Manifest].Settings) that are part of a run's
// [Setup], in display order: each changes figures the lab writes. Every other setting is
// bookkeeping (run_flags, resumed_at, the proxy's listen address and server log) or is already
// covered by another part of the setup (llama_server's binary by the server version).
//
//   - driver: scripted or live sessions are different experiments.
//   - cache_model, renderer, prefill (sim): the cache model decides cached tokens; the renderer
//     the tokens; the prefill model (placeholder or a calibration file) the prefill times.
//   - model_hidden, model_layers (the synthetic model's shape), generic_build (Ollama built for
//     any CPU or this one) and ollama_flash_attention (OLLAMA_FLASH_ATTENTION): they change
//     prefill times, not cached tokens; a setup is one set of conditions for every figure of a
//     report, prefill times included, so runs that differ in them are not repetitions.
//   - max_steps, max_tokens, turn_timeout, seed, temperature (live): what the model generates.
//   - profile, api, thinking, cache_breakpoints (openai, anthropic): where cached tokens are read,
//     the wire API, how the model thinks, where the prompt cache is marked.
//   - pricing: the price table behind cost_usd.
//   - render (lab proxy): whose rendering the expected cached tokens come from.
//   - cache_reuse, parallel, cache_ram (llama-server --cache-reuse, -np, --cache-ram): chunk
//     reuse after the common prefix, sessions at once on their own slots, the host-memory
//     prompt cache: each changes cached tokens.
//   - family, chat_template (lab run --family: on a server set for a family other than Qwen3
//     only, on the sim for any family given, Qwen3's too): another vocabulary, architecture and
//     conversation format; families never pool.
var SetupSettings = []string{
	"driver", "cache_model", "renderer", "prefill",
	"model_hidden", "model_layers", "generic_build", "ollama_flash_attention",
	"max_steps", "max_tokens", "turn_timeout", "seed", "temperature",
	"profile", "api", "thinking", "cache_breakpoints", "pricing", "render",
	"cache_reuse", "parallel", "cache_ram", "family", "chat_template", "token_counter", "model_architecture",
}

// Setup is what a run measured with: the runs of one setup are repetitions of one experiment
// and their figures may be pooled; runs of different setups are never pooled (reports show them
// side by side; lab compare refuses them unless told the difference is the point). Scenario
// content is per scenario, in [Manifest].ScenarioDigests, and splits scenarios, not setups.
// The host and the user's tags are not part of it.
//
// Every field is a string as the manifest records it; "" is unknown (a run made before the
// field existed, a model file the lab did not know) or, for a setting, not set. Unknown is a
// value of its own: two runs that both lack a model digest are the same setup if everything
// else agrees (the report says the digest is unknown), a run with a digest and one without are
// not.
type Setup struct {
	// Backend, ServerVersion, Model and NumCtx are the manifest's.
	Backend       string `json:"backend"`
	ServerVersion string `json:"server_version"`
	Model         string `json:"model"`
	// ModelDigest is [Manifest].ModelDigest.
	ModelDigest string `json:"model_digest"`
	NumCtx      int    `json:"num_ctx"`
	// CacheStart is how each session found the server's prompt cache: "warm" (lab run --warm),
	// "uncontrolled" (the lab could neither empty it nor use a nonce) or "cold", from
	// [Manifest].CacheState.
	CacheStart string `json:"cache_start"`
	// Settings are the manifest's [SetupSettings] that are set, by name.
	Settings map[string]string `json:"settings,omitempty"`
}

// SetupOf returns the setup of the run m describes.
func SetupOf(m *Manifest) Setup {
	s := Setup{Backend: m.Backend, ServerVersion: m.ServerVersion, Model: m.Model, ModelDigest: m.ModelDigest, NumCtx: m.NumCtx}
	switch m.CacheState {
	case CacheWarm, CacheUncontrolled:
		s.CacheStart = m.CacheState
	default:
		s.CacheStart = "cold"
	}
	for _, k := range SetupSettings {
		if v, ok := m.Settings[k]; ok {
			if s.Settings == nil {
				s.Settings = map[string]string{}
			}
			s.Settings[k] = v
		}
	}
	return s
}

// SetupPart is one named part of a [Setup], as [Setup.Parts] lists them.
type SetupPart struct {
	// Name is the part's name for people: "backend", "server version", "model", "model file
	// digest", "num_ctx", "cache start", or a setting's key.
	Name string
	// Value is the part's value; "" when unknown or not set.
	Value string
}

// Parts returns the setup's parts in a fixed order: backend, server version, model, model file
// digest, num_ctx, cache start, then every [SetupSettings] key (set or not).
func (s Setup) Parts() []SetupPart {
	ps := []SetupPart{
		{"backend", s.Backend}, {"server version", s.ServerVersion}, {"model", s.Model},
		{"model file digest", s.ModelDigest}, {"num_ctx", strconv.Itoa(s.NumCtx)}, {"cache start", s.CacheStart},
	}
	for _, k := range SetupSettings {
		ps = append(ps, SetupPart{k, s.Settings[k]})
	}
	return ps
}

// Key returns a string equal for equal setups and different for different ones, for grouping.
func (s Setup) Key() string {
	var b strings.Builder
	for _, p := range s.Parts() {
		b.WriteString(strconv.Quote(p.Name) + "=" + strconv.Quote(p.Value) + "\n")
	}
	return b.String()
}

// SetupDiff names each difference between the setups and scenario contents of two runs, a and b
// (an old and a new run, say), in [Setup.Parts] order then by scenario: "backend ollama vs sim",
// "model file digest unknown vs sha256:…", "scenario midnight content sha256:… vs sha256:…".
// Only scenarios both runs have are compared (one a run lacks is no difference of setup). A part
// known in one run and unknown in the other is a difference (the lab cannot tell that they are
// the same); a part unknown in both is not, and is named in unverified instead ("model file
// digest", "scenario midnight content"). Arms both runs have are compared by definition
// ([Manifest.ArmDigests]): "arm prune-20k definition 1a2b… vs 3c4d…".
func SetupDiff(a, b *Manifest) (diffs, unverified []string) {
	pa, pb := SetupOf(a).Parts(), SetupOf(b).Parts()
	for i := range pa {
		va, vb := pa[i].Value, pb[i].Value
		switch {
		case va == vb && va == "" && pa[i].Name == "model file digest":
			unverified = append(unverified, pa[i].Name)
		case va != vb:
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", pa[i].Name, valueOrUnknown(pa[i].Name, va), valueOrUnknown(pa[i].Name, vb)))
		}
	}
	for _, sc := range a.Scenarios {
		if !slices.Contains(b.Scenarios, sc) {
			continue
		}
		da, db := a.ScenarioDigests[sc], b.ScenarioDigests[sc]
		switch {
		case da == "" && db == "":
			unverified = append(unverified, "scenario "+sc+" content")
		case da != db:
			diffs = append(diffs, fmt.Sprintf("scenario %s content %s vs %s", sc, orUnknown(da), orUnknown(db)))
		}
	}
	// An arm of one name defined otherwise in the two runs (an arm file edited between them) is
	// another arm; a run that recorded no definitions (made before they were) cannot tell.
	da, db := a.ArmDigests(), b.ArmDigests()
	for _, arm := range a.Arms {
		if !slices.Contains(b.Arms, arm) {
			continue
		}
		if x, y := da[arm], db[arm]; x != y && x != "" && y != "" {
			diffs = append(diffs, fmt.Sprintf("arm %s definition %s vs %s", arm, ShortDigest(x), ShortDigest(y)))
		}
	}
	return diffs, unverified
}

// Shown returns the part's value for people: "unknown" for an unknown digest, server version,
// model or backend, "not set" for a setting not set.
func (p SetupPart) Shown() string { return valueOrUnknown(p.Name, p.Value) }

// valueOrUnknown shows a setup part's value: "unknown" for an unknown digest, server version or
// model, "not set" for a setting not set (a setting's own values include "none":
// --cache-breakpoints none).
func valueOrUnknown(name, v string) string {
	if v != "" {
		return v
	}
	switch name {
	case "model file digest", "server version", "model", "backend":
		return "unknown"
	}
	return "not set"
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// DigestFile returns "sha256:<hex>", the SHA-256 of the file at path (a model file: a GGUF of
// some gigabytes takes seconds). It returns an error naming the file when it cannot be read.
func DigestFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("digest of the model file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest of the model file %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// ShortDigest returns the first 12 hex digits of a "sha256:<hex>" digest, for people ("" stays
// "").
func ShortDigest(d string) string {
	h := strings.TrimPrefix(d, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}
