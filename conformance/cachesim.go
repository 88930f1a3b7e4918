package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"

	"lab/cachesim"
)

// cachesimInput is a cachesim case's input: a cache model, its options, and the requests sent one
// after another.
type cachesimInput struct {
	Model    string            `json:"model"`
	Options  cachesim.Options  `json:"options"`
	Requests []cachesimRequest `json:"requests"`
}

// cachesimRequest is one request: its prompt, the tokens generated after it, and (Anthropic only)
// its breakpoints and block boundaries. Prompt is a list of token ids or a generator {"len": N,
// "shared_with_previous": K}: the previous request's first K prompt tokens followed by fresh ids.
// Generated is a list of ids or {"len": N} (fresh ids).
type cachesimRequest struct {
	Prompt      json.RawMessage `json:"prompt"`
	Generated   json.RawMessage `json:"generated,omitempty"`
	Breakpoints []int           `json:"breakpoints,omitempty"`
	// Blocks are the request's content-block boundaries (Anthropic only; see
	// cachesim.Anthropic.LookupBlocks).
	Blocks []int `json:"blocks,omitempty"`
}

type tokenGen struct {
	Len                int `json:"len"`
	SharedWithPrevious int `json:"shared_with_previous"`
}

type cachesimWant struct {
	Cached []int `json:"cached"`
}

// tokens decodes a token list or generator. next hands out fresh ids, prev is the previous
// request's prompt.
func tokens(raw json.RawMessage, prev []int32, next *int32) ([]int32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '[' {
		var ids []int32
		if err := decodeStrict(raw, &ids); err != nil {
			return nil, err
		}
		return ids, nil
	}
	var g tokenGen
	if err := decodeStrict(raw, &g); err != nil {
		return nil, err
	}
	if g.Len < 0 || g.SharedWithPrevious < 0 || g.SharedWithPrevious > g.Len || g.SharedWithPrevious > len(prev) {
		return nil, fmt.Errorf("generator len %d shared_with_previous %d: want 0 ≤ shared ≤ len and ≤ the previous prompt's %d tokens", g.Len, g.SharedWithPrevious, len(prev))
	}
	out := make([]int32, 0, g.Len)
	out = append(out, prev[:g.SharedWithPrevious]...)
	for len(out) < g.Len {
		out = append(out, *next)
		*next++
	}
	return out, nil
}

// checkCachesim runs a cachesim case: builds the model, looks up and stores each request in order,
// and compares the cached tokens of every request with want.cached, naming the first difference.
func checkCachesim(c Case) error {
	var in cachesimInput
	var want cachesimWant
	if err := decodeCase(c, &in, &want); err != nil {
		return err
	}
	if len(want.Cached) != len(in.Requests) {
		return fmt.Errorf("want: %d cached figures for %d requests", len(want.Cached), len(in.Requests))
	}
	m, err := cachesim.NewModel(in.Model, in.Options)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	next := int32(1_000_000)
	var prev []int32
	got := make([]int, len(in.Requests))
	for i, r := range in.Requests {
		prompt, err := tokens(r.Prompt, prev, &next)
		if err != nil {
			return fmt.Errorf("request %d: prompt: %w", i+1, err)
		}
		gen, err := tokens(r.Generated, nil, &next)
		if err != nil {
			return fmt.Errorf("request %d: generated: %w", i+1, err)
		}
		if a, ok := m.(*cachesim.Anthropic); ok {
			got[i], err = a.LookupBlocks(prompt, r.Breakpoints, r.Blocks)
			if err != nil {
				return fmt.Errorf("request %d: %w", i+1, err)
			}
		} else {
			if r.Breakpoints != nil || r.Blocks != nil {
				return fmt.Errorf("request %d: breakpoints and blocks are for the anthropic model, not %s", i+1, in.Model)
			}
			got[i] = m.Lookup(prompt)
		}
		m.Store(prompt, gen)
		prev = prompt
	}
	for i := range got {
		if got[i] != want.Cached[i] {
			return fmt.Errorf("request %d: cached %d, want %d (all: got %v, want %v)", i+1, got[i], want.Cached[i], got, want.Cached)
		}
	}
	return nil
}
