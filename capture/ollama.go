package capture

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// IsOllama reports whether the server at upstream (a base URL such as http://127.0.0.1:11434,
// a path after the host ignored) is Ollama: its GET /api/version answers HTTP 200 with a JSON
// object holding a non-empty "version" string, within two seconds. Any error is false. It is for
// [Options].UpstreamOllama; call it only for a loopback upstream, which the lab may probe.
func IsOllama(ctx context.Context, client *http.Client, upstream string) bool {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return false
	}
	u.Path, u.RawQuery = "/api/version", ""
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil {
		return false
	}
	return strings.TrimSpace(v.Version) != ""
}
