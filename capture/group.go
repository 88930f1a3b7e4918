package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"
	"unsafe"

	"lab/cachesim"
	"lab/chat"
)

// conversation is one group of recorded requests: a row's scenario, held while it is live. What
// it needs to take more requests is its *convState, nil once the grouper dropped it (evict);
// once dropped, only its record (convRecord, for the manifest's session records) and its
// fingerprint stay.
type conversation struct {
	// name is the rows' scenario: "conversation-0001", numbered in order of appearance
	// (convName of num).
	name string
	// num is its index in order of appearance, from 0: its record is grouper.records[num].
	num int32
	// key is the session header or prompt_cache_key that names it; "" for a conversation found
	// by its messages.
	key string
	// requests is the number of requests recorded so far.
	requests   int
	lastFailed bool
	// side says why it is a client's side request ("" for a session's own conversation).
	side string
	// used is the grouper's count of recorded requests when it recorded this one's last.
	used int
	*convState
}

// convState is what a conversation keeps to group later requests with it: message keys (see
// messageKey) and digests, never texts.
type convState struct {
	// first is the digest of the first request's message keys (keysDigest).
	first [keySum]byte
	// last is the last request's message keys followed by its reply's.
	last []msgKey
	// lastLen is the number of messages of the last request (without its reply).
	lastLen int
	// system is the system prompt of its last request: its leading system and developer
	// messages' keys.
	system []msgKey
	// systemEnds is the first and last systemEnd bytes of its last request's system prompt
	// (systemText), for related.
	systemEnds [2]string
	// lastTexts are the role, trimmed text length and digest of each message of last (the
	// reply's included), for extendedBy; kept for a conversation with a key only, the one case
	// assign reads them.
	lastTexts []textSig
	// toolNames are its last request's tools' names, in order (toolNames); "" when it carried
	// no tool list.
	toolNames string
	// parts is the last request that succeeded, by part, for rows without a rendering
	// (cachesim.FirstDifference), each text as its digest (digestParts); nil before the first.
	parts []partSum
}

// maxLiveConversations and idleRequests bound what the grouper holds: a conversation is
// dropped (evict) once idleRequests requests were recorded since its last, or when more than
// maxLiveConversations are held, the least recently used first. A capture in front of an agent
// for hours then holds the messages' keys of the conversations still going (a coding session
// and its side requests; the lab's 50-client load), not of every one it saw (a title request
// is a conversation of its own, done after one request). A request that would have continued
// a dropped conversation starts a new one, and its row says so (evictedNote).
const (
	maxLiveConversations = 256
	idleRequests         = 2048
)

// grouper assigns requests to conversations:
//
//  1. a request that carries a conversation key (a known client's session header, or OpenAI's
//     prompt_cache_key) is compared only with the conversations of that key, one without a
//     key only with the conversations without one: a client sends its side requests (a title,
//     a subagent) under the session's key, and they are conversations of their own;
//  2. among those, it belongs to the conversation whose last request (followed by its reply)
//     shares the longest prefix of messages with it, provided the shared prefix holds at least
//     one message that is not the system prompt (its system and developer messages; with a
//     key, the system prompt is left out of the comparison: a session that rebuilt its system prompt, a date in it say, is still the
//     session its key names, and the row shows the divergence at "system"; without a key such a
//     request is that session only when its system prompt is the same one rebuilt (see related)
//     and it holds the conversation's whole last request and reply after it, else it starts a
//     new conversation); a conversation whose last request the new one
//     contains whole (it only appends) is preferred, then one with the same system prompt, then
//     the longest prefix, then the latest conversation. A request identical to a conversation's first one starts a new
//     conversation (the same session run again), unless it is the retry of a failed first
//     request;
//  3. otherwise, a request that carries assistant messages (a history) under the same system
//     prompt as the latest conversation of its key is that conversation resumed with its
//     history rewritten;
//  4. otherwise it starts a new conversation (with its key).
//
// With a key, a request whose system prompt differs from a conversation's, is not the same
// prompt rebuilt (the two share neither their first nor their last bytes: see related), and
// does not contain that conversation's last request and its reply whole is not part of it: a title, summary or memory
// request sent under the session's key, with its own system prompt and some of the session's
// messages. A new conversation is a side request ([metrics.Sample.SideRequest]) when its
// headers say so (side, a parent session's header), or when its system prompt differs from
// the one of the conversation that had the latest request under the same key (without a key,
// among those without one): an agent's title generator or memory sub-agent beside its session.
//
// Messages are compared by role, text, tool calls and tool call ids; reasoning is left out, as
// harnesses and templates drop it from earlier turns (spec 3.2.0 §8).
//
// What it holds is bounded (maxLiveConversations, idleRequests): of a conversation it dropped
// it keeps an 8-byte record of its counts (convRecord) and a fingerprint (its key, or without
// one the first message after its system prompt) by which a later request that may continue
// it is told: that request's row is grouped without it and says so (lost).
type grouper struct {
	// records are every conversation's counts, in order of appearance (conversation.num).
	records []convRecord
	// live are the conversations still held, in order of appearance.
	live []*conversation
	// latest is the conversation that had the latest request, by key: c nil once dropped.
	latest map[string]latestConv
	// dropped is the latest conversation dropped, by fingerprint (fingerprint): its num.
	dropped map[dropKey]int32
	// recorded counts the requests recorded (update).
	recorded int
	// lost is set by assign: why the request's grouping may differ from what the dropped
	// conversations' messages would have given ("" when none could have taken it).
	lost string
	// maxLive and idle are maxLiveConversations and idleRequests unless set (tests).
	maxLive, idle int
}

// assign returns the request's conversation, and whether it is new. The caller records the
// request with update.
func (g *grouper) assign(key, side string, req *chat.Request) (c *conversation, created bool) {
	msgs := messageKeys(req.Messages)
	system := msgs[:len(msgs)-len(withoutSystem(msgs))]
	var best *conversation
	bestShared, bestExt, bestSame := 0, false, false
	sysText := systemText(req.Messages)
	g.lost = ""
	gone := int32(-1)
	if fp, ok := fingerprint(key, msgs); ok {
		if n, ok := g.dropped[fp]; ok {
			gone = n
		}
	}
	for i := len(g.live) - 1; i >= 0; i-- {
		c := g.live[i]
		if c.key != key || c.requests == 0 {
			continue
		}
		a, b, lastLen := msgs, c.last, c.lastLen
		if key != "" {
			a, b = withoutSystem(a), withoutSystem(b)
			lastLen -= len(c.last) - len(b)
		}
		shared := commonPrefix(a, b)
		if key != "" && shared < len(a) && shared < len(b) {
			// A client that adds to its last message rather than after it (Claude Code appends
			// its reminders to the user message) still continues the session its key names
			// (without a key, "task 1" and "task 10" are two tasks).
			i, j := len(msgs)-len(a)+shared, len(c.last)-len(b)+shared
			if j < len(c.lastTexts) && c.lastTexts[j].extendedBy(req.Messages[i]) {
				shared += 1 + commonPrefix(a[shared+1:], b[shared+1:])
			}
		}
		rebuilt := false
		if !slices.ContainsFunc(a[:shared], func(k msgKey) bool { return !systemKey(k) }) {
			// Without a key, a system prompt rebuilt (a date in it that changed at midnight)
			// before the conversation's whole history and its reply, with the same tools, is
			// still that session (a sub-agent with the session's first message has tools of
			// its own).
			if key != "" || !related(sysText, c.systemEnds) || toolNames(req.Tools) != c.toolNames {
				continue
			}
			an, bn := withoutSystem(msgs), withoutSystem(c.last)
			if n := commonPrefix(an, bn); n == 0 || n < len(bn) {
				continue
			}
			rebuilt = true
		}
		if keysDigest(msgs) == c.first && (c.requests > 1 || !c.lastFailed) {
			continue // the session again, from its start
		}
		ext := shared >= lastLen || rebuilt
		same := slices.Equal(system, c.system)
		if key != "" && !same && shared < len(b) && !related(sysText, c.systemEnds) {
			continue // a side request with its own system prompt
		}
		switch {
		case best == nil, ext && !bestExt,
			ext == bestExt && same && !bestSame,
			ext == bestExt && same == bestSame && shared > bestShared:
			best, bestShared, bestExt, bestSame = c, shared, ext, same
		}
	}
	if best != nil {
		if gone >= 0 && !bestExt {
			g.lost = g.evictedNote(gone)
		}
		return best, false
	}
	if gone >= 0 {
		g.lost = g.evictedNote(gone)
	}
	latest, hasLatest := g.latest[key]
	prev := latest.c
	if hasLatest && prev == nil && g.lost == "" {
		// The latest conversation of the key was dropped: the rules below, which compare with
		// its system prompt and tools, cannot be read.
		g.lost = g.evictedNote(latest.num)
	}
	if prev != nil && hasAssistant(req.Messages) && (slices.Equal(system, prev.system) ||
		related(sysText, prev.systemEnds) && toolNames(req.Tools) == prev.toolNames) {
		// A history the client rewrote (Qwen Code's resumed session drops a reminder from its
		// first user message), under the latest conversation's system prompt, or that prompt
		// rebuilt with the same tools (Qwen Code's git status in it changed after an edit):
		// that session resumed, not a new one, which would start without assistant messages.
		return prev, false
	}
	c = g.add(key)
	switch {
	case side != "":
		c.side = side
	case knownSide(sysText) != "":
		c.side = knownSide(sysText)
	case prev != nil && !slices.Equal(system, prev.system) && !related(sysText, [2]string{prev.systemEnds[0]}) &&
		(len(req.Tools) == 0 || prev.toolNames != "" && (key != "" || hasAssistant(req.Messages))):
		// A request with tools beside a conversation without is the session that a side
		// request (a title asked first) came before. Without a key (Qwen Code and pi send
		// none), a request with tools, a system prompt of its own and no history is another
		// harness's session through the same proxy; Qwen Code's memory sub-agent, which has
		// tools, starts with the session's history.
		c.side = "a system prompt of its own beside " + prev.name + "'s"
	}
	return c, true
}

func (g *grouper) add(key string) *conversation {
	num := int32(len(g.records))
	c := &conversation{name: convName(num), num: num, key: key, convState: &convState{}}
	g.records = append(g.records, convRecord{})
	g.live = append(g.live, c)
	return c
}

// convName is the scenario name of the conversation of index num (from 0, in order of
// appearance): "conversation-0001" for 0.
func convName(num int32) string { return fmt.Sprintf("conversation-%04d", num+1) }

// convRecord is what the grouper keeps of every conversation, live or dropped, for the
// manifest's session records: its requests recorded and whether its last one failed.
type convRecord struct {
	requests   int32
	lastFailed bool
}

// latestConv is grouper.latest's entry: the conversation that had a key's latest request, c
// nil once it was dropped, and its index (conversation.num).
type latestConv struct {
	c   *conversation
	num int32
}

// limits returns g.maxLive and g.idle, or their defaults maxLiveConversations and idleRequests.
func (g *grouper) limits() (maxLive, idle int) {
	maxLive, idle = g.maxLive, g.idle
	if maxLive <= 0 {
		maxLive = maxLiveConversations
	}
	if idle <= 0 {
		idle = idleRequests
	}
	return maxLive, idle
}

// evictedNote is the warning of a row that may continue the dropped conversation of index num.
func (g *grouper) evictedNote(num int32) string {
	maxLive, idle := g.limits()
	return fmt.Sprintf("this request may continue %s, whose messages the proxy no longer holds (it keeps the %d conversations used last, none idle for %d requests): grouped without it, so its scenario, request_index and divergence_segment count from what the proxy still holds", convName(num), maxLive, idle)
}

// fingerprint is what a dropped conversation is known by (grouper.dropped): its key, or without
// one the first message key after the system prompt of msgs (its last request's); ok is false
// when there is none (no later request can share a message with it).
func fingerprint(key string, msgs []msgKey) (fp dropKey, ok bool) {
	if key != "" {
		return dropKey{key: key}, true
	}
	if ns := withoutSystem(msgs); len(ns) > 0 {
		return dropKey{msg: ns[0]}, true
	}
	return dropKey{}, false
}

// dropKey is a fingerprint: a conversation key, or without one a message key.
type dropKey struct {
	key string
	msg msgKey
}

// evict drops what the conversations idle for more than g.idle requests hold, then the least
// recently used beyond g.maxLive.
func (g *grouper) evict() {
	maxLive, idle := g.limits()
	drop := func(c *conversation) {
		if fp, ok := fingerprint(c.key, c.last); ok {
			if g.dropped == nil {
				g.dropped = map[dropKey]int32{}
			}
			g.dropped[fp] = c.num
		}
		if l, ok := g.latest[c.key]; ok && l.c == c {
			g.latest[c.key] = latestConv{num: c.num}
		}
		c.convState = nil
	}
	g.live = slices.DeleteFunc(g.live, func(c *conversation) bool {
		if g.recorded-c.used < idle {
			return false
		}
		drop(c)
		return true
	})
	for len(g.live) > maxLive {
		lru := slices.MinFunc(g.live, func(a, b *conversation) int { return a.used - b.used })
		drop(lru)
		g.live = slices.DeleteFunc(g.live, func(c *conversation) bool { return c == lru })
	}
}

// update records req (answered with reply, nil when there was none) as c's latest request, then
// drops the conversations idle for too long or beyond the number held (evict).
func (g *grouper) update(c *conversation, req *chat.Request, reply *chat.Reply, failed bool) {
	defer g.evict()
	g.recorded++
	c.used = g.recorded
	// Room for the reply's key: the keys are held as long as the conversation is.
	msgs := append(make([]msgKey, 0, len(req.Messages)+1), messageKeys(req.Messages)...)
	if c.requests == 0 {
		c.first = keysDigest(msgs)
	}
	c.requests++
	c.lastLen = len(msgs)
	c.toolNames = toolNames(req.Tools)
	c.system = slices.Clone(msgs[:len(msgs)-len(withoutSystem(msgs))])
	c.systemEnds = ends(systemText(req.Messages))
	if g.latest == nil {
		g.latest = map[string]latestConv{}
	}
	if c.side == "" {
		g.latest[c.key] = latestConv{c: c, num: c.num}
	}
	c.lastFailed = failed
	g.records[c.num] = convRecord{requests: int32(c.requests), lastFailed: failed}
	if reply != nil && !failed {
		msgs = append(msgs, messageKey(chat.Message{Role: chat.RoleAssistant, Content: reply.Content, ToolCalls: reply.ToolCalls}))
	}
	c.last = msgs
	if c.key == "" {
		return // lastTexts are read only under a key
	}
	c.lastTexts = c.lastTexts[:0]
	for _, m := range req.Messages {
		c.lastTexts = append(c.lastTexts, sigOf(m.Role, m.Content))
	}
	if reply != nil && !failed {
		c.lastTexts = append(c.lastTexts, sigOf(chat.RoleAssistant, reply.Content))
	}
}

// textSig is what a conversation keeps of a message's text to tell whether a later message
// extends it: its role, the length in bytes of its trimmed text and that text's SHA-256.
type textSig struct {
	role chat.Role
	n    int
	sum  [sha256.Size]byte
}

func sigOf(role chat.Role, content string) textSig {
	t := strings.TrimSpace(content)
	return textSig{role: role, n: len(t), sum: sha256.Sum256([]byte(t))}
}

// extendedBy reports whether m is the message s was taken of with text added at its end (and
// no tool call: a message with tool calls is compared whole): the same role, a longer trimmed
// text that starts with the old one.
func (s textSig) extendedBy(m chat.Message) bool {
	t := strings.TrimSpace(m.Content)
	return m.Role == s.role && s.n > 0 && len(t) > s.n && len(m.ToolCalls) == 0 && sha256.Sum256([]byte(t[:s.n])) == s.sum
}

// toolNames returns the tools' names in order, joined by NUL.
func toolNames(ts []chat.Tool) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Name)
		b.WriteByte(0)
	}
	return b.String()
}

// hasAssistant reports whether msgs hold an assistant message (a history).
func hasAssistant(msgs []chat.Message) bool {
	return slices.ContainsFunc(msgs, func(m chat.Message) bool { return m.Role == chat.RoleAssistant })
}

// withoutSystem returns keys without the system and developer messages they start with.
func withoutSystem(keys []msgKey) []msgKey {
	for len(keys) > 0 && systemKey(keys[0]) {
		keys = keys[1:]
	}
	return keys
}

// systemKey reports whether a message key (messageKey) is a system or developer message's:
// both are the application's instructions (OpenAI's developer message is its system prompt).
func systemKey(k msgKey) bool { return k[0] == 1 }

func messageKeys(msgs []chat.Message) []msgKey {
	out := make([]msgKey, len(msgs))
	for i, m := range msgs {
		out[i] = messageKey(m)
	}
	return out
}

// keySum is the bytes of a digest the grouper keeps: the first 16 of a SHA-256 (128 bits, so
// that two different texts share one with a chance of 2^-64 after 2^32 of them).
const keySum = 16

// msgKey is a message's key (messageKey): its first byte 1 for a system or developer message, 0
// for any other, then the first keySum-1 bytes of the SHA-256 of its role and what two
// messages must share (120 bits). It is a value, 16 bytes held in place: a conversation keeps
// one per message of its last request.
type msgKey [keySum]byte

// keysDigest is the digest of a sequence of message keys.
func keysDigest(keys []msgKey) (d [keySum]byte) {
	h := sha256.New()
	for _, k := range keys {
		h.Write(k[:])
	}
	var sum [sha256.Size]byte
	copy(d[:], h.Sum(sum[:0]))
	return d
}

// messageKey is what two messages must share to be the same message of a conversation: role,
// text (surrounding white space trimmed), tool calls (name and compacted arguments) and the
// tool call id a result answers, as a digest (msgKey): a conversation keeps the keys of its
// last request for as long as it is held, so a key must not hold the message's text.
func messageKey(m chat.Message) msgKey {
	h := sha256.New()
	hashString(h, string(m.Role))
	h.Write([]byte{0})
	hashString(h, strings.TrimSpace(m.Content))
	h.Write([]byte{0})
	hashString(h, m.ToolCallID)
	for _, tc := range m.ToolCalls {
		h.Write([]byte{0})
		hashString(h, tc.Name)
		h.Write([]byte{0})
		var c bytes.Buffer
		if json.Compact(&c, tc.Arguments) == nil {
			h.Write(c.Bytes())
		} else {
			h.Write(tc.Arguments)
		}
	}
	var sum [sha256.Size]byte
	var k msgKey
	if m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper {
		k[0] = 1
	}
	copy(k[1:], h.Sum(sum[:0]))
	return k
}

// partSum is one part of a request (cachesim.DifferenceParts) as a conversation keeps it: its
// name and the digest of its text (keySum bytes of its SHA-256), 40 bytes held in place.
type partSum struct {
	kind     cachesim.SegmentKind
	index    int32
	practice string
	sum      [keySum]byte
}

// digestParts returns parts as a conversation keeps them: each name with its text's digest,
// which is all [cachesim.FirstDifference] compares.
func digestParts(parts []cachesim.Part) []partSum {
	out := make([]partSum, len(parts))
	for i, p := range parts {
		h := sha256.New()
		hashString(h, p.Text)
		var sum [sha256.Size]byte
		out[i] = partSum{kind: p.Name.Kind, index: int32(p.Name.Index), practice: p.Name.Practice}
		copy(out[i].sum[:], h.Sum(sum[:0]))
	}
	return out
}

// asParts returns ps as cachesim.Parts, each Text its digest, for [cachesim.FirstDifference].
func asParts(ps []partSum) []cachesim.Part {
	texts := make([]byte, 0, len(ps)*keySum)
	for _, p := range ps {
		texts = append(texts, p.sum[:]...)
	}
	all := string(texts)
	out := make([]cachesim.Part, len(ps))
	for i, p := range ps {
		out[i] = cachesim.Part{Name: cachesim.Segment{Kind: p.kind, Index: int(p.index), Practice: p.practice}, Text: all[i*keySum : (i+1)*keySum]}
	}
	return out
}

// hashString writes s to h as it is: converting a text to bytes would copy it, and a buffer to
// copy it through would be allocated per call (h, an interface, keeps the compiler from
// proving the buffer stays on the stack: 32 KiB of garbage for every message of every request).
// io.Writer's contract makes that safe: "Write must not modify the slice data, even
// temporarily. Implementations must not retain p." So s's own bytes are passed.
func hashString(h hash.Hash, s string) {
	if len(s) > 0 {
		h.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
	}
}

func commonPrefix(a, b []msgKey) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// SideRequestPrompt is the start of the system prompt of a known agent's side request.
type SideRequestPrompt struct {
	// Agent is the client that sends it, such as "opencode".
	Agent string
	// What the request is for, such as "title".
	What string
	// Prefix starts the request's first system message.
	Prefix string
}

// SideRequestPrompts are the side requests of the agents the lab knows, by their system
// prompt (agents/agents.json's side_requests): opencode's title request, sent under the
// session's own x-session-affinity, before or beside its first turn.
var SideRequestPrompts = []SideRequestPrompt{
	{Agent: "opencode", What: "title", Prefix: "You are a title generator."},
}

// knownSide returns why a request with system prompt sys (systemText) is a known agent's side
// request, "" when it is none of SideRequestPrompts.
func knownSide(sys string) string {
	for _, p := range SideRequestPrompts {
		if strings.HasPrefix(sys, p.Prefix) {
			return p.Agent + "'s " + p.What + " request (its system prompt)"
		}
	}
	return ""
}

// systemEnd is how many bytes of each end of a system prompt a conversation keeps (related).
const systemEnd = 256

// systemText returns the text of msgs' leading system and developer messages, joined by NUL.
func systemText(msgs []chat.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role != chat.RoleSystem && m.Role != chat.RoleDeveloper {
			break
		}
		b.WriteString(m.Content)
		b.WriteByte(0)
	}
	return b.String()
}

// ends returns the first and last systemEnd bytes of s (all of s for each when shorter).
func ends(s string) [2]string {
	if len(s) <= systemEnd {
		return [2]string{strings.Clone(s), strings.Clone(s)}
	}
	return [2]string{strings.Clone(s[:systemEnd]), strings.Clone(s[len(s)-systemEnd:])}
}

// related reports whether system prompt s looks like the one whose ends are e, rebuilt (a date
// added at its start or end, say): within the first system message where they differ, their
// first or last bytes agree over at least half the shorter's kept end, or 64 bytes. Whole
// system messages the two share at their start or end do not count: Claude Code opens every
// request, its title requests too, with the same billing header block, and a side request's
// own prompt (a title generator's) shares at most a few words with the session's.
func related(s string, e [2]string) bool {
	se := ends(s)
	shared := commonPrefixString(se[0], e[0])
	head := len(shared) - (strings.LastIndexByte(shared, 0) + 1)
	tail := commonSuffixLen(se[1], e[1])
	if t := se[1][len(se[1])-tail:]; tail > 0 {
		// systemText ends every message with a NUL: the bytes that count are those before the
		// first NUL of the shared end, the terminator of the last message left out.
		if i := strings.IndexByte(strings.TrimSuffix(t, "\x00"), 0); i >= 0 {
			tail = i
		}
	}
	need := min(64, (min(len(se[0]), len(e[0]))+1)/2)
	return need > 0 && max(head, tail) >= need
}

func commonPrefixString(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

func commonSuffixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
