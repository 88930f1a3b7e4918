package main

import (
	"fmt"
	"regexp"
	"strings"

	"lab/harness"
	"lab/metrics"
)

// tagKeyRE is what a --tag key may hold: letters, digits, "_", "-" and ".", so that it reads the
// same in a manifest, a report and a benchmark name.
var tagKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// parseTags parses the values of --tag key=value (repeatable) into the manifest's tags. A value
// without "=", an empty or odd key, a value holding a comma or a line break (the flag's values
// are recorded comma-joined for lab run --resume), or one key given two values is bad input
// naming the flag and the value.
func parseTags(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	tags := map[string]string{}
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		switch {
		case !ok:
			return nil, badInput("--tag %q: want key=value, such as --tag machine=ci-1", v)
		case !tagKeyRE.MatchString(k):
			return nil, badInput("--tag %q: the key %q must be letters, digits, _, - or . (at least one)", v, k)
		case strings.ContainsAny(val, ",\n\r"):
			return nil, badInput("--tag %q: the value must not hold a comma or a line break", v)
		}
		if old, dup := tags[k]; dup && old != val {
			return nil, badInput("--tag %s: given twice, %q and %q", k, old, val)
		}
		tags[k] = val
	}
	return tags, nil
}

// withSetup records in cfg what a report and lab compare need to tell setups apart: loop.json's
// bytes (each scenario's content digest, scenario.Scenario.Digest), the model file's digest when
// the lab knows the file (gguf, "" when it does not) and the tags. It returns an error naming the
// model file when it cannot be read.
func withSetup(cfg *harness.RunConfig, loopJSON []byte, gguf string, tags map[string]string) error {
	cfg.LoopJSON, cfg.Tags = loopJSON, tags
	if gguf == "" {
		return nil
	}
	d, err := metrics.DigestFile(gguf)
	if err != nil {
		return fmt.Errorf("--gguf: %w", err)
	}
	cfg.ModelDigest = d
	return nil
}
