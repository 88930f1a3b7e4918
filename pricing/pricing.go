// Package pricing prices one request's token usage in US dollars (`cost_usd` per row
// for cloud runs).
//
//  1. prices.yaml (embedded; [Default]) or a file of the same form ([Load], [Parse]) gives, per
//     model, the price per million tokens of input, cached reads, 5-minute and 1-hour cache
//     writes and output, each model with the URL its prices were read from and the date. The
//     file is decoded strictly: an unknown key, a missing price or a bad value is an error
//     naming the file and line.
//  2. [Table.Cost] (or [Cost] over the embedded table) prices a normalised [chat.Usage] by the
//     model's scheme: Anthropic (input_tokens excludes cache reads and writes; 5-minute and
//     1-hour writes priced apart) or OpenAI (prompt_tokens includes cached tokens; cached tokens
//     at the cached price, the rest at the input price).
//
// A model that is not in the table, or a usage lacking a count the price needs, has no cost
// (ok=false): the lab records null, never 0.
package pricing

import (
	_ "embed"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"lab/chat"
)

// The pricing schemes ([Price].Scheme).
const (
	// SchemeAnthropic: the prompt splits into input_tokens (uncached), cache_read_input_tokens
	// and cache_creation_input_tokens (5-minute and 1-hour writes), each with its price.
	SchemeAnthropic = "anthropic"
	// SchemeOpenAI: prompt_tokens includes cached_tokens; the cached part is priced at
	// CachedRead, the rest at Input.
	SchemeOpenAI = "openai"
)

// Price is one model's prices, in US dollars per million tokens.
type Price struct {
	// Model is the model id, as the API names it.
	Model string
	// Aliases are other ids priced the same.
	Aliases []string
	// Scheme is SchemeAnthropic or SchemeOpenAI.
	Scheme string
	// Input is the price of uncached prompt tokens.
	Input float64
	// CachedRead is the price of prompt tokens read from the prompt cache.
	CachedRead float64
	// CacheWrite5m and CacheWrite1h are the prices of prompt tokens written to the cache with a
	// 5-minute and a 1-hour lifetime (SchemeAnthropic only).
	CacheWrite5m float64
	CacheWrite1h float64
	// Output is the price of generated tokens, reasoning included.
	Output float64
	// MaxPromptTokens, when above 0, is the longest prompt these prices hold for; a longer
	// prompt is billed at a tier the table does not hold and has no cost.
	MaxPromptTokens int64
	// Source is the URL the prices were read from; Read the day they were read there.
	Source string
	Read   time.Time
}

// Table is a set of model prices. Safe for concurrent use: it is not changed after [Parse].
type Table struct {
	prices []Price
	byID   map[string]int
}

//go:embed prices.yaml
var pricesYAML []byte

// defaultTable parses the embedded prices once; prices.yaml is checked by a test.
var defaultTable = sync.OnceValues(func() (*Table, error) { return Parse("pricing/prices.yaml", pricesYAML) })

// Default returns the embedded table (pricing/prices.yaml).
func Default() (*Table, error) { return defaultTable() }

// Cost prices u for model with the embedded table; see [Table.Cost].
func Cost(model string, u *chat.Usage) (usd float64, ok bool) {
	t, err := defaultTable()
	if err != nil {
		return 0, false
	}
	return t.Cost(model, u)
}

// Load reads a prices file of the prices.yaml form.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Models returns the priced model ids, sorted.
func (t *Table) Models() []string {
	out := make([]string, len(t.prices))
	for i, p := range t.prices {
		out[i] = p.Model
	}
	sort.Strings(out)
	return out
}

var snapshotRE = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Lookup returns the prices of model: an entry whose id or alias equals it, else one that equals
// it without a trailing snapshot date (-YYYYMMDD as Anthropic dates snapshots, -YYYY-MM-DD as
// OpenAI does).
func (t *Table) Lookup(model string) (Price, bool) {
	if i, ok := t.byID[model]; ok {
		return t.prices[i], true
	}
	if base := snapshotRE.ReplaceAllString(model, ""); base != model {
		if i, ok := t.byID[base]; ok {
			return t.prices[i], true
		}
	}
	return Price{}, false
}

// Cost returns the price in US dollars of one request to model with usage u. ok is false when
// the model is not in the table, u is nil, a count the scheme needs is nil, or the prompt is
// longer than MaxPromptTokens.
//
// SchemeAnthropic needs Generated, CachedRead, CacheWrite and Uncached (or Prompt, from which
// Uncached = Prompt − CachedRead − CacheWrite). When CacheWrite > 0 it needs the lifetime split:
// both CacheWrite5m and CacheWrite1h, or one of them (the other is the rest of CacheWrite).
// Cost = (Uncached·Input + CachedRead·CachedRead price + 5m·CacheWrite5m + 1h·CacheWrite1h +
// Generated·Output) / 10⁶.
//
// SchemeOpenAI needs Prompt, CachedRead and Generated: Cost = ((Prompt − CachedRead)·Input +
// CachedRead·CachedRead price + Generated·Output) / 10⁶.
func (t *Table) Cost(model string, u *chat.Usage) (usd float64, ok bool) {
	p, found := t.Lookup(model)
	if !found || u == nil || u.Generated == nil || u.CachedRead == nil {
		return 0, false
	}
	read, gen := *u.CachedRead, *u.Generated
	var prompt int64
	var sum float64
	switch p.Scheme {
	case SchemeAnthropic:
		if u.CacheWrite == nil {
			return 0, false
		}
		write := *u.CacheWrite
		var uncached int64
		switch {
		case u.Uncached != nil:
			uncached = *u.Uncached
		case u.Prompt != nil:
			uncached = *u.Prompt - read - write
		default:
			return 0, false
		}
		var w5, w1 int64
		switch {
		case u.CacheWrite5m != nil && u.CacheWrite1h != nil:
			w5, w1 = *u.CacheWrite5m, *u.CacheWrite1h
		case u.CacheWrite5m != nil:
			w5, w1 = *u.CacheWrite5m, write-*u.CacheWrite5m
		case u.CacheWrite1h != nil:
			w5, w1 = write-*u.CacheWrite1h, *u.CacheWrite1h
		case write == 0:
		default:
			return 0, false
		}
		if uncached < 0 || w5 < 0 || w1 < 0 {
			return 0, false
		}
		prompt = uncached + read + write
		sum = float64(uncached)*p.Input + float64(read)*p.CachedRead + float64(w5)*p.CacheWrite5m + float64(w1)*p.CacheWrite1h
	case SchemeOpenAI:
		if u.Prompt == nil || *u.Prompt < read {
			return 0, false
		}
		prompt = *u.Prompt
		sum = float64(prompt-read)*p.Input + float64(read)*p.CachedRead
	default:
		return 0, false
	}
	if p.MaxPromptTokens > 0 && prompt > p.MaxPromptTokens {
		return 0, false
	}
	return (sum + float64(gen)*p.Output) / 1e6, true
}

// Parse reads a prices file (name is used in errors): a mapping `models:` of model id to its
// fields (see prices.yaml). Every error is "name:line: message".
func Parse(name string, data []byte) (*Table, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	errAt := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:1: want a mapping with the key models", name)
	}
	root := doc.Content[0]
	var models *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "models" {
			return nil, errAt(k, "unknown key %q (want models)", k.Value)
		}
		models = v
	}
	if models == nil || models.Kind != yaml.MappingNode {
		n := root
		if models != nil {
			n = models
		}
		return nil, errAt(n, "models: want a mapping of model id to prices")
	}
	t := &Table{byID: map[string]int{}}
	for i := 0; i < len(models.Content); i += 2 {
		k, v := models.Content[i], models.Content[i+1]
		p, err := parsePrice(k, v, errAt)
		if err != nil {
			return nil, err
		}
		for _, id := range append([]string{p.Model}, p.Aliases...) {
			if _, dup := t.byID[id]; dup {
				return nil, errAt(k, "model id %q priced twice", id)
			}
			t.byID[id] = len(t.prices)
		}
		t.prices = append(t.prices, p)
	}
	return t, nil
}

func parsePrice(k, v *yaml.Node, errAt func(*yaml.Node, string, ...any) error) (Price, error) {
	p := Price{Model: k.Value}
	if k.Kind != yaml.ScalarNode || p.Model == "" {
		return p, errAt(k, "want a model id")
	}
	if v.Kind != yaml.MappingNode {
		return p, errAt(v, "model %s: want a mapping of prices", p.Model)
	}
	seen := map[string]*yaml.Node{}
	usd := func(n *yaml.Node, dst *float64) error {
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return errAt(n, "model %s: %q is not a price (USD per million tokens, 0 or more)", p.Model, n.Value)
		}
		*dst = f
		return nil
	}
	for i := 0; i < len(v.Content); i += 2 {
		fk, fv := v.Content[i], v.Content[i+1]
		if _, dup := seen[fk.Value]; dup {
			return p, errAt(fk, "model %s: %s given twice", p.Model, fk.Value)
		}
		seen[fk.Value] = fk
		var err error
		switch fk.Value {
		case "scheme":
			p.Scheme = fv.Value
			if p.Scheme != SchemeAnthropic && p.Scheme != SchemeOpenAI {
				err = errAt(fv, "model %s: scheme %q: want %s or %s", p.Model, fv.Value, SchemeAnthropic, SchemeOpenAI)
			}
		case "aliases":
			if fv.Kind != yaml.SequenceNode {
				err = errAt(fv, "model %s: aliases: want a list of model ids", p.Model)
				break
			}
			for _, a := range fv.Content {
				if a.Kind != yaml.ScalarNode || a.Value == "" {
					return p, errAt(a, "model %s: aliases: want a model id", p.Model)
				}
				p.Aliases = append(p.Aliases, a.Value)
			}
		case "input":
			err = usd(fv, &p.Input)
		case "cached_read":
			err = usd(fv, &p.CachedRead)
		case "cache_write_5m":
			err = usd(fv, &p.CacheWrite5m)
		case "cache_write_1h":
			err = usd(fv, &p.CacheWrite1h)
		case "output":
			err = usd(fv, &p.Output)
		case "max_prompt_tokens":
			n, perr := strconv.ParseInt(fv.Value, 10, 64)
			if fv.Kind != yaml.ScalarNode || perr != nil || n <= 0 {
				err = errAt(fv, "model %s: max_prompt_tokens %q: want a positive whole number", p.Model, fv.Value)
			}
			p.MaxPromptTokens = n
		case "source":
			u, perr := url.Parse(fv.Value)
			if fv.Kind != yaml.ScalarNode || perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				err = errAt(fv, "model %s: source %q: want the http(s) URL the prices were read from", p.Model, fv.Value)
			}
			p.Source = fv.Value
		case "read":
			d, perr := time.Parse(time.DateOnly, fv.Value)
			if fv.Kind != yaml.ScalarNode || perr != nil {
				err = errAt(fv, "model %s: read %q: want the date the prices were read, YYYY-MM-DD", p.Model, fv.Value)
			}
			p.Read = d
		default:
			err = errAt(fk, "model %s: unknown key %q", p.Model, fk.Value)
		}
		if err != nil {
			return p, err
		}
	}
	need := []string{"scheme", "input", "cached_read", "output", "source", "read"}
	if p.Scheme == SchemeAnthropic {
		need = append(need, "cache_write_5m", "cache_write_1h")
	}
	for _, f := range need {
		if seen[f] == nil {
			return p, errAt(k, "model %s: %s missing", p.Model, f)
		}
	}
	if p.Scheme == SchemeOpenAI {
		for _, f := range []string{"cache_write_5m", "cache_write_1h"} {
			if n := seen[f]; n != nil {
				return p, errAt(n, "model %s: %s is an Anthropic price; scheme openai has no cache-write price", p.Model, f)
			}
		}
	}
	return p, nil
}
