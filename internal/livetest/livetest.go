// Package livetest holds what the live tests of the lab's synthetic models share: the npm
// tokenizer packages' own tokenizers as the reference ids, and a JSON POST to a local server.
// Tests only; nothing here talks to anything but loopback and the node binary given.
package livetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
)

// NPMTokenize returns, for each text, the token ids the npm tokenizer package whose models/
// folder is tokDir gives it: its own fromPreTrained tokenizer (Hugging Face's tokenizer.json
// semantics as transformers.js implements them), no special tokens added, run with the node
// binary given. An error names the package and ends with the last 400 bytes of node's stderr.
func NPMTokenize(ctx context.Context, node, tokDir string, texts []string) ([][]int32, error) {
	const script = `const {fromPreTrained} = require(process.argv[1]);
const tk = fromPreTrained();
let input = "";
process.stdin.on("data", d => input += d);
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  process.stdout.write(JSON.stringify(texts.map(t => tk.encode(t, {add_special_tokens: false}))));
});`
	in, err := json.Marshal(texts)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, "-e", script, filepath.Dir(tokDir))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node tokenize with %s: %w: %s", filepath.Dir(tokDir), err, tail(stderr.String(), 400))
	}
	var ids [][]int32
	if err := json.Unmarshal(out, &ids); err != nil {
		return nil, fmt.Errorf("node tokenize: %w", err)
	}
	return ids, nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// PostJSON posts body as JSON to url and decodes the answer into out; a status other than 200
// is an error naming the URL and the status.
func PostJSON(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
