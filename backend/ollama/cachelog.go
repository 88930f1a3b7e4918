package ollama

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"
)

// CacheLine is one `msg="loading cache slot" id=0 cache=C prompt=N used=U remaining=R` line of an
// Ollama v0.17.4 server's debug log (OLLAMA_DEBUG=1; the runner writes it when a request takes
// its cache slot, before the prefill), all in tokens of the served model.
type CacheLine struct {
	// Prompt is the request's prompt length (N); it equals the answer's prompt_eval_count.
	Prompt int
	// Used is the number of prompt tokens reused from the slot's KV cache (U): the request's
	// cached tokens.
	Used int
	// Remaining is the number of prompt tokens left to prefill (R = N − U).
	Remaining int
	// Cut is the server's cut of this request's prompt to its context window, from the log
	// lines that came before this one since the previous cache line; nil when it logged none.
	Cut *PromptCut
}

// PromptCut is what an Ollama v0.17.4 server logged when a request did not fit its context
// window (num_ctx): the server dropped messages from the front of the chat
// (server/prompt.go chatPrompt, debug line `msg="truncating input messages which exceed context
// length" truncated=K`), or the runner dropped prompt tokens after the first keep
// (runner/ollamarunner/runner.go NewSequence, warning line `msg="truncating input prompt"
// limit=L prompt=N keep=K new=M`). Counts are in messages or tokens as named; a field the server
// did not log is 0.
type PromptCut struct {
	// KeptMessages is the number of chat messages the server kept (its truncated= field, which
	// counts the messages kept, not those dropped); 0 when it dropped none.
	KeptMessages int
	// Limit is the runner's context window in tokens (limit=); 0 when the runner cut nothing.
	Limit int
	// Prompt and New are the prompt's length in tokens before and after the runner's cut
	// (prompt=, new=).
	Prompt, New int
}

// maxPending bounds the cache lines a [CacheLog] keeps unconsumed; older ones are dropped.
const maxPending = 1024

// CacheLog follows an Ollama server's debug log for its `loading cache slot` lines. It reads
// whole lines only, from where it last stopped, and starts over from the file's start when the
// file got shorter than that (truncated or rotated). Not safe for concurrent use.
//
// Lines are read into a queue and consumed in one of two ways: [CacheLog.Next] takes the last
// line since the previous call (a client that sends one request at a time and reads the log
// after each: the lab's ollama backend), [CacheLog.Match] the first line of a given prompt length
// (a reader that lags behind the server and must give each request its own line: lab proxy).
type CacheLog struct {
	path    string
	offset  int64
	pending []CacheLine
	seen    bool
	// cut gathers the truncation lines read since the last cache line.
	cut *PromptCut
}

// OpenCacheLog returns a CacheLog of the file at path positioned at its current end: only lines
// written afterwards are read. A file that does not exist yet is read from its start once it
// does.
func OpenCacheLog(path string) *CacheLog {
	l := &CacheLog{path: path}
	if fi, err := os.Stat(path); err == nil {
		l.offset = fi.Size()
	}
	return l
}

// Path returns the log file's path.
func (l *CacheLog) Path() string { return l.path }

// Seen reports whether the log has shown a cache line since it was opened (none at all suggests
// a server without OLLAMA_DEBUG=1, or another log).
func (l *CacheLog) Seen() bool { return l.seen }

// Next reads the log and returns the last cache line since the previous call (of Next or
// Match), dropping every earlier one, waiting up to wait for one to appear (the runner's output
// reaches the log through the server a moment after the answer). nil when none appeared. Errors
// are the file's.
func (l *CacheLog) Next(wait time.Duration) (*CacheLine, error) {
	deadline := time.Now().Add(wait)
	for {
		if err := l.read(); err != nil {
			return nil, err
		}
		if n := len(l.pending); n > 0 {
			line := l.pending[n-1]
			l.pending = l.pending[:0]
			return &line, nil
		}
		if !time.Now().Before(deadline) {
			return nil, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Match reads the log and returns the first unconsumed cache line whose Prompt is prompt,
// dropping it and every line before it (requests the caller does not follow), waiting up to
// wait for one to appear. When none appeared it returns nil and keeps every line. prompt < 0
// takes the first unconsumed line whatever its length. Errors are the file's.
func (l *CacheLog) Match(prompt int, wait time.Duration) (*CacheLine, error) {
	deadline := time.Now().Add(wait)
	for {
		if err := l.read(); err != nil {
			return nil, err
		}
		for i, line := range l.pending {
			if prompt < 0 || line.Prompt == prompt {
				l.pending = append(l.pending[:0], l.pending[i+1:]...)
				return &line, nil
			}
		}
		if !time.Now().Before(deadline) {
			return nil, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Skip reads the log and drops every unconsumed line: what follows belongs to requests sent
// from now on.
func (l *CacheLog) Skip() error {
	err := l.read()
	l.pending = l.pending[:0]
	return err
}

// read appends the cache lines of the log's new whole lines to the queue.
func (l *CacheLog) read() error {
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("read the server log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < l.offset {
		// The log was truncated or rotated: read the new file from its start.
		l.offset = 0
	}
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return fmt.Errorf("read the server log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read the server log: %w", err)
	}
	// Only whole lines: a line still being written is read next time.
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	l.offset += int64(end + 1)
	sc := bufio.NewScanner(bytes.NewReader(data[:end+1]))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		text := sc.Text()
		if p, u, r, ok := ParseCacheLine(text); ok {
			l.pending = append(l.pending, CacheLine{Prompt: p, Used: u, Remaining: r, Cut: l.cut})
			l.seen, l.cut = true, nil
			continue
		}
		if m := truncMessagesRE.FindStringSubmatch(text); m != nil {
			if l.cut == nil {
				l.cut = &PromptCut{}
			}
			l.cut.KeptMessages, _ = strconv.Atoi(m[1])
		} else if m := truncPromptRE.FindStringSubmatch(text); m != nil {
			if l.cut == nil {
				l.cut = &PromptCut{}
			}
			l.cut.Limit, _ = strconv.Atoi(m[1])
			l.cut.Prompt, _ = strconv.Atoi(m[2])
			l.cut.New, _ = strconv.Atoi(m[3])
		}
	}
	if n := len(l.pending); n > maxPending {
		l.pending = append(l.pending[:0], l.pending[n-maxPending:]...)
	}
	return nil
}

// The truncation lines of Ollama v0.17.4 ([PromptCut]).
var (
	truncMessagesRE = regexp.MustCompile(`msg="truncating input messages which exceed context length".*?\btruncated=(\d+)`)
	truncPromptRE   = regexp.MustCompile(`msg="truncating input prompt".*?\blimit=(\d+) prompt=(\d+)\b.*?\bnew=(\d+)`)
)

var cacheSlotRE = regexp.MustCompile(`msg="loading cache slot".*?\bprompt=(\d+) used=(\d+) remaining=(\d+)`)

// ParseCacheLine parses a server log line `… msg="loading cache slot" id=0 cache=C prompt=N
// used=U remaining=R` (Ollama v0.17.4 runner, OLLAMA_DEBUG=1) and returns N, U and R.
func ParseCacheLine(line string) (prompt, used, remaining int, ok bool) {
	m := cacheSlotRE.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, 0, false
	}
	prompt, _ = strconv.Atoi(m[1])
	used, _ = strconv.Atoi(m[2])
	remaining, _ = strconv.Atoi(m[3])
	return prompt, used, remaining, true
}
