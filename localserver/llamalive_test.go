package localserver

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/gguf"
)

// TestLlamaServerLive fetches Debian unstable's llama-server into the lab's cache (or reuses
// it), prepares the synthetic model, starts the server on it, checks GET /health and /props and
// stops it. It needs apt-get, dpkg-deb and the Debian archive the machine's apt sources name;
// it is skipped with the reason when any cannot be had, and by -short.
func TestLlamaServerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fetches and starts a real llama-server")
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	cache, err := DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	p, err := PrepareLlamaServer(ctx, LlamaSetup{CacheDir: cache, Log: testLog{t}})
	if errors.Is(err, ErrArchiveUnreachable) {
		t.Skipf("the Debian archive cannot be reached: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prepared %s (%s) in %s", p.Version, p.ServerVersion, time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(p.ServerVersion, "version: ") {
		t.Errorf("ServerVersion = %q", p.ServerVersion)
	}
	// A second call finds the folder without the network: an unreadable apt configuration
	// would fail it otherwise.
	again, err := PrepareLlamaServer(ctx, LlamaSetup{CacheDir: cache, AptEtc: filepath.Join(t.TempDir(), "none")})
	if err != nil || again.Root != p.Root {
		t.Fatalf("second prepare = %+v, %v; want %s from the cache", again, err, p.Root)
	}
	if got, ok := PreparedOf(p.Binary); !ok || got.Version != p.Version {
		t.Errorf("PreparedOf(%s) = %+v, %v", p.Binary, got, ok)
	}
	prep, err := PrepareModel(ctx, Setup{CacheDir: cache, Model: gguf.DefaultModelOptions(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	srv, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: p.Binary, Model: prep.GGUF, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	t.Logf("started %s in %s, n_ctx %d", srv.URL, time.Since(start).Round(time.Millisecond), srv.CtxSize)
	resp, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health: %s", resp.Status)
	}
	if srv.CtxSize != gguf.DefaultContextLength {
		t.Errorf("n_ctx from /props = %d, want %d", srv.CtxSize, gguf.DefaultContextLength)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := llamaHealthy(ctx, srv.URL); err == nil {
		t.Error("server still answers after Stop")
	}
}
