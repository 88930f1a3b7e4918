package hygiene

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Search inserts the result of a call of tool with the arguments args and the result text (§6).
// For a tool in dedupe.by_result, a call with the same arguments — compared as JSON with sorted
// keys, at every depth — as a full result still in the dedupe table, whose text is the same, is
// answered "[#0027] Same result as #0026.", naming the newest such full result (never a stub);
// what is stored under the stub's id is the text it stands for (§1). Otherwise the call is
// answered like [Session.Result] (id, cap) and, for a tool in dedupe.by_result, becomes an entry
// of the dedupe table. Every full result with the same arguments stays an entry while it is in the
// request, so after A→X, A→Y a third A→X names the first: its text is in front of the model; one
// a harness practice removed from the request ([Session.Withdraw]) is no entry any more.
//
// The call is run again by the caller and its text compared, so a change from anywhere shows up
// as a full result. Other tools are never deduplicated. Arguments that are not valid JSON are
// compared as given, trimmed; empty arguments are "{}". With §6 off (or ids off) there is no
// dedupe: the call is answered like [Session.Result].
func (s *Session) Search(tool string, args json.RawMessage, text string) string {
	if !s.m.SearchDedupe || !s.m.ResultIDs || !slices.Contains(s.cfg.Dedupe.ByResult, tool) {
		return s.Result(text)
	}
	key := tool + "\x00" + canonicalJSON(args)
	idx := s.searchIdx[key]
	for i := len(idx) - 1; i >= 0; i-- {
		prev := s.searches[idx[i]]
		if !prev.gone && prev.text == text {
			id := s.nextID()
			s.store = append(s.store, stored{text: "[" + id + "]\n" + text, body: len(id) + 3, ref: prev.id, search: true})
			return "[" + id + "] " + fill(s.cfg.Dedupe.Same, "id", prev.id)
		}
	}
	out, id := s.result(text)
	s.searches = append(s.searches, searchEntry{key: key, id: id, text: text, turn: s.turn})
	s.store[len(s.store)-1].entry = len(s.searches)
	s.searchIdx[key] = append(s.searchIdx[key], len(s.searches)-1)
	return out
}

// canonicalJSON returns args as JSON with every object's keys sorted and no insignificant space;
// numbers keep their spelling. Invalid JSON is returned trimmed; empty arguments are "{}".
func canonicalJSON(args json.RawMessage) string {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(trimmed)
	}
	// encoding/json writes map keys sorted, at every depth.
	out, err := json.Marshal(v)
	if err != nil {
		return string(trimmed)
	}
	return string(out)
}
