// Package agents installs real coding agents from the npm registry into the lab's cache, points
// each at a loopback endpoint (normally `lab proxy` in front of the lab's local server) from a
// scratch HOME with dummy keys and telemetry off, and drives the same scripted multi-turn
// session through each one, one child process per user turn. The agents, their pinned versions
// and how each is configured are data: agents.json, embedded.
//
// Nothing an agent sends leaves loopback: HTTP_PROXY and HTTPS_PROXY point at a listener of the
// run's own that refuses every request and records where it was going (outside.jsonl), and the
// agent's base URL points at a recording front (wire.jsonl: method, path and headers of each
// request, secrets redacted) that forwards to the proxy.
package agents

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

//go:embed agents.json
var agentsJSON []byte

// Session says where an agent puts the identity of its session or prompt-cache key on the wire,
// as found in the agent's own installed package.
type Session struct {
	// Where is "header", "body" (a top-level field of the request body) or "none".
	Where string `json:"where"`
	// Name is the header or body field name; "" when Where is "none".
	Name string `json:"name"`
	// Note says more (other identifying headers, what the value is).
	Note string `json:"note,omitempty"`
}

// Agent is one coding agent of agents.json: its npm package pinned to a version, the API it
// speaks, how it is pointed at a base URL and kept quiet, and the command lines of a first and
// a resumed turn.
//
// Env values, Files paths and contents, First and Resume arguments are templates: {home} (the
// scratch HOME), {project} (the scratch project folder), {base} (the endpoint's root URL, no
// trailing slash, such as http://127.0.0.1:8081), {model}, {key} (a dummy API key) and
// {prompt} (the user turn's text) are replaced.
type Agent struct {
	Name    string `json:"name"`
	Package string `json:"package"`
	Version string `json:"version"`
	// Checked is the date (YYYY-MM-DD) the version was checked on the registry and driven.
	Checked string `json:"checked"`
	// API is openai-chat (Chat Completions), openai-responses (Responses) or
	// anthropic-messages (Messages), as configured here.
	API string `json:"api"`
	// Bin is the command in the package's node_modules/.bin.
	Bin string `json:"bin"`
	// BaseURL and Quiet say, for people, how the agent is pointed and silenced.
	BaseURL string  `json:"base_url"`
	Quiet   string  `json:"quiet"`
	Session Session `json:"session"`
	// SideRequests says which requests of their own, beside the session's (titles, summaries,
	// sub-agents), the agent was seen to send.
	SideRequests string            `json:"side_requests"`
	Env          map[string]string `json:"env"`
	Files        map[string]string `json:"files"`
	First        []string          `json:"first"`
	Resume       []string          `json:"resume"`
}

// Spec returns the agent's npm package spec, NAME@VERSION.
func (a Agent) Spec() string { return a.Package + "@" + a.Version }

// DirName is the agent's folder name in the cache, <name>-<version>.
func (a Agent) DirName() string { return a.Name + "-" + a.Version }

// catalogue is agents.json.
type catalogue struct {
	Checked string  `json:"checked"`
	Agents  []Agent `json:"agents"`
}

// parseCatalogue reads and checks agents.json; an error names the agent and field.
func parseCatalogue(b []byte) ([]Agent, error) {
	var c catalogue
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("agents.json: %w", err)
	}
	seen := map[string]bool{}
	for i, a := range c.Agents {
		where := fmt.Sprintf("agents.json: agents[%d] (%q)", i, a.Name)
		switch {
		case a.Name == "" || strings.ContainsAny(a.Name, "/\\ ,"):
			return nil, fmt.Errorf("%s: name: want a word without slashes, spaces or commas", where)
		case seen[a.Name]:
			return nil, fmt.Errorf("%s: name: given twice", where)
		case a.Package == "" || a.Version == "" || strings.ContainsAny(a.Version, "^~*<> "):
			return nil, fmt.Errorf("%s: package and version: want an exact version", where)
		case a.Checked == "":
			return nil, fmt.Errorf("%s: checked: want the date the version was checked", where)
		case a.API != "openai-chat" && a.API != "openai-responses" && a.API != "anthropic-messages":
			return nil, fmt.Errorf("%s: api %q: want openai-chat, openai-responses or anthropic-messages", where, a.API)
		case a.Bin == "":
			return nil, fmt.Errorf("%s: bin: want the command's name", where)
		case !hasPrompt(a.First) || !hasPrompt(a.Resume):
			return nil, fmt.Errorf("%s: first and resume: each needs a {prompt} argument", where)
		case a.Session.Where != "header" && a.Session.Where != "body" && a.Session.Where != "none":
			return nil, fmt.Errorf("%s: session.where %q: want header, body or none", where, a.Session.Where)
		case (a.Session.Where == "none") != (a.Session.Name == ""):
			return nil, fmt.Errorf("%s: session.name: want a name unless where is none", where)
		}
		for p := range a.Files {
			if !strings.HasPrefix(p, "{home}/") && !strings.HasPrefix(p, "{project}/") {
				return nil, fmt.Errorf("%s: files: %q: want a path under {home}/ or {project}/", where, p)
			}
		}
		seen[a.Name] = true
	}
	if len(c.Agents) == 0 {
		return nil, fmt.Errorf("agents.json: no agents")
	}
	return c.Agents, nil
}

func hasPrompt(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "{prompt}") {
			return true
		}
	}
	return false
}

// All returns the agents of the embedded agents.json, in its order. It panics if the embedded
// file is malformed (a test checks it).
func All() []Agent {
	as, err := parseCatalogue(agentsJSON)
	if err != nil {
		panic(err)
	}
	return as
}

// Select returns the agents named in names (all of them for none), in agents.json's order; an
// unknown name is an error that lists the known ones.
func Select(names []string) ([]Agent, error) {
	all := All()
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[strings.TrimSpace(n)] = true
	}
	var out []Agent
	for _, a := range all {
		if want[a.Name] {
			out = append(out, a)
			delete(want, a.Name)
		}
	}
	if len(want) > 0 {
		var bad, known []string
		for n := range want {
			bad = append(bad, n)
		}
		for _, a := range all {
			known = append(known, a.Name)
		}
		sort.Strings(bad)
		return nil, fmt.Errorf("unknown agent %s (known: %s)", strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// expand replaces the template fields of s (see [Agent]).
func expand(s string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}
