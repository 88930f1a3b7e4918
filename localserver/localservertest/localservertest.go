// Package localservertest gives tests the real llama-server and synthetic model the lab sets up
// itself (llama-server from Debian's unstable suite, [localserver.PrepareLlamaServer]; the
// synthetic Qwen3 GGUF, [localserver.PrepareModel]), both cached in the lab's cache folder, so a
// test on the real server runs wherever `make test` runs, with no variable to set.
package localservertest

import (
	"context"
	"os"
	"testing"
	"time"

	"lab/localserver"
)

// LlamaServer returns the llama-server binary and the GGUF model a real-server test starts. The
// variables LAB_LLAMA_SERVER (a binary) and LAB_LLAMA_GGUF (a model) choose others; otherwise
// both are prepared in the lab's cache ($LAB_CACHE, else ~/.cache/lab): the first call on a new
// machine fetches llama-server (about 20 s) and writes the model; later ones find both. The test
// is skipped, with the reason, when -short is given or they cannot be had (no apt-get, no Debian
// archive reachable).
func LlamaServer(t testing.TB) (binary, model string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real llama-server; skipped with -short")
	}
	binary, model = os.Getenv("LAB_LLAMA_SERVER"), os.Getenv("LAB_LLAMA_GGUF")
	if binary != "" && model != "" {
		return binary, model
	}
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skipf("no cache folder for the lab's llama-server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if binary == "" {
		p, err := localserver.PrepareLlamaServer(ctx, localserver.LlamaSetup{CacheDir: cache})
		if err != nil {
			t.Skipf("the lab's llama-server cannot be had here: %v", err)
		}
		binary = p.Binary
	}
	if model == "" {
		p, err := localserver.PrepareModel(ctx, localserver.Setup{CacheDir: cache})
		if err != nil {
			t.Fatalf("the synthetic model: %v", err)
		}
		model = p.GGUF
	}
	return binary, model
}
