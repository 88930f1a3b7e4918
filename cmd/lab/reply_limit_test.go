package main

import (
	"strconv"
	"strings"
	"testing"

	"lab/chat"
	"lab/metrics"
)

// lab run --max-reply-bytes: refused below 1; recorded in the manifest (the default too); a
// reply past it (the sim's scripted model, driven live) is an error row naming the limit, sent
// once.
func TestMaxReplyBytes(t *testing.T) {
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--max-reply-bytes", "0"); code != exitBadInput || !strings.Contains(errOut, "--max-reply-bytes") {
		t.Errorf("--max-reply-bytes 0: exit %d, stderr %q; want 2 naming the flag", code, errOut)
	}
	needTokenizer(t)
	results := t.TempDir()
	code, _, errOut := runLab(t, "run", "--backend", "sim", "--driver", "live", "--scenario", "midnight", "--arm", "spec",
		"--max-steps", "2", "--max-reply-bytes", "20", "--results", results, "--run-id", "lim", "--quiet")
	if code == exitOK {
		t.Fatalf("a run whose replies are past a 20-byte limit exited 0: %s", errOut)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "lim"))
	if err != nil {
		t.Fatal(err)
	}
	if got := man.Settings[SettingMaxReplyBytes]; got != "20" {
		t.Errorf("manifest %s = %q; want 20", SettingMaxReplyBytes, got)
	}
	var failed *metrics.Sample
	for i := range samples {
		if samples[i].Error != "" {
			failed = &samples[i]
			break
		}
	}
	if failed == nil || !strings.Contains(failed.Error, chat.ReplyTooLong) || !strings.Contains(failed.Error, "20 bytes") || failed.Retries != 0 {
		t.Fatalf("the error row: %+v; want one naming the 20-byte limit, not retried", failed)
	}

	runMidnightSim(t, results, "default")
	man, _, err = metrics.ReadRun(metrics.RunDir(results, "default"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := man.Settings[SettingMaxReplyBytes], strconv.Itoa(chat.DefaultMaxReplyBytes); got != want {
		t.Errorf("a run without the flag records %s = %q; want the default %s", SettingMaxReplyBytes, got, want)
	}
}
