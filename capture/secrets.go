package capture

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"lab/chat"
)

// Redacted is what replaces a credential wherever the lab writes: a field's value in a saved
// request body, a secret's bytes in an error, a warning or a progress line.
const Redacted = "[redacted]"

// RedactBody returns a JSON body with the value of every credential-named field (see
// [chat.IsCredentialName]), at any depth, replaced by the string "[redacted]", and the values it
// replaced (a string as decoded and as written, a number as written), for [Redact] to remove
// wherever they appear later. A credential-named field holding an object or an array has every
// string and number under it redacted, at any depth, but for the values of JSON Schema keywords
// (schemaWords: a tool's JSON schema with a "password" property keeps its shape, type and
// description); other objects are walked, their fields redacted by their own names; true, false
// and null are kept. A string holding a JSON object or array (a
// tool call's arguments in OpenAI's Chat Completions and Responses APIs) is redacted the same
// way and written back as a string. Everything else is kept byte for byte. A body
// that is not JSON is returned unchanged with no secrets: nothing in it can be found by name.
func RedactBody(body []byte) ([]byte, []string) {
	return redactBody(body, json.Valid(body))
}

// redactBody is [RedactBody] of a body known to be valid JSON or not (valid: a json.Unmarshal of
// it succeeded, which checks the whole text first), which saves scanning it once more.
func redactBody(body []byte, valid bool) ([]byte, []string) {
	if !valid {
		return body, nil
	}
	w := bodyWalker{b: body}
	w.value(false)
	if len(w.spans) == 0 {
		return body, w.secrets
	}
	var out bytes.Buffer
	out.Grow(len(body))
	last := 0
	for _, sp := range w.spans {
		out.Write(body[last:sp.start])
		out.WriteString(sp.with)
		last = sp.end
	}
	out.Write(body[last:])
	return out.Bytes(), slices.Compact(w.secrets)
}

// schemaWords are the JSON Schema keywords whose values, under a credential-named object, are
// a schema's words, not credentials (a tool's "password" parameter: {"type":"string", ...}).
var schemaWords = map[string]bool{
	"type": true, "description": true, "title": true, "format": true, "pattern": true, "enum": true,
	"const": true, "minLength": true, "maxLength": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "minItems": true,
	"maxItems": true, "uniqueItems": true, "items": true, "properties": true, "required": true,
	"additionalProperties": true, "anyOf": true, "oneOf": true, "allOf": true, "not": true,
	"$ref": true, "$schema": true, "$id": true, "$defs": true, "definitions": true, "nullable": true,
	"writeOnly": true, "readOnly": true, "deprecated": true,
}

// bodyWalker walks a valid JSON text in one pass, noting the spans to replace and the secrets
// they held.
type bodyWalker struct {
	b       []byte
	pos     int
	spans   []bodySpan
	secrets []string
}

// bodySpan is the replacement of b[start:end].
type bodySpan struct {
	start, end int
	with       string
}

func (w *bodyWalker) ws() {
	for w.pos < len(w.b) && (w.b[w.pos] == ' ' || w.b[w.pos] == '\t' || w.b[w.pos] == '\r' || w.b[w.pos] == '\n') {
		w.pos++
	}
}

// str skips the string at pos and returns its raw text, quotes included.
func (w *bodyWalker) str() []byte {
	start := w.pos
	for w.pos++; w.pos < len(w.b); w.pos++ {
		switch w.b[w.pos] {
		case '\\':
			w.pos++
		case '"':
			w.pos++
			return w.b[start:w.pos]
		}
	}
	return w.b[start:]
}

// value walks the value at pos; secret: it is a credential-named field's.
func (w *bodyWalker) value(secret bool) {
	w.ws()
	if w.pos >= len(w.b) {
		return
	}
	start := w.pos
	switch w.b[w.pos] {
	case '{':
		w.pos++
		for {
			w.ws()
			if w.pos >= len(w.b) || w.b[w.pos] == '}' {
				w.pos++
				return
			}
			if w.b[w.pos] == ',' {
				w.pos++
				continue
			}
			key := unquote(w.str())
			w.ws()
			w.pos++ // ':'
			// Under a credential-named object every value is a credential, but for the words
			// of a JSON schema (a tool's "password" parameter keeps its schema).
			w.value(chat.IsCredentialName(key) || secret && !schemaWords[key])
		}
	case '[':
		w.pos++
		for {
			w.ws()
			if w.pos >= len(w.b) || w.b[w.pos] == ']' {
				w.pos++
				return
			}
			if w.b[w.pos] == ',' {
				w.pos++
				continue
			}
			// The elements of a credential-named array are credentials too (several keys);
			// an object among them is walked by its own fields' names.
			w.value(secret)
		}
	case '"':
		raw := w.str()
		switch {
		case secret:
			w.spans = append(w.spans, bodySpan{start, w.pos, `"` + Redacted + `"`})
			inner := string(raw[1 : len(raw)-1])
			if s := unquote(raw); s != inner {
				w.secrets = append(w.secrets, s)
			}
			w.secrets = append(w.secrets, inner)
			// "Bearer sk-…" (an Authorization header's form): the token alone is a secret
			// too, as an upstream may echo it without its scheme.
			if _, tok, ok := strings.Cut(strings.TrimSpace(unquote(raw)), " "); ok {
				w.secrets = append(w.secrets, strings.TrimSpace(tok))
			}
		case mayHoldJSON(raw):
			// JSON in a string (a tool call's arguments in OpenAI's APIs): redacted the
			// same way, and written back as a string.
			if inner, found := RedactBody([]byte(unquote(raw))); len(found) > 0 {
				enc, _ := json.Marshal(string(inner))
				w.spans = append(w.spans, bodySpan{start, w.pos, string(enc)})
				w.secrets = append(w.secrets, found...)
			}
		}
	default: // a number, true, false or null
		for w.pos < len(w.b) && !strings.ContainsRune(",]} \t\r\n", rune(w.b[w.pos])) {
			w.pos++
		}
		if c := w.b[start]; secret && (c == '-' || c >= '0' && c <= '9') {
			w.spans = append(w.spans, bodySpan{start, w.pos, `"` + Redacted + `"`})
			w.secrets = append(w.secrets, string(w.b[start:w.pos]))
		}
	}
}

// unquote decodes a JSON string's raw text (quotes included).
func unquote(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// mayHoldJSON reports whether a JSON string's raw text (quotes included) starts, after white
// space (escaped or not), with '{' or '[': it may hold a JSON object or array.
func mayHoldJSON(raw []byte) bool {
	for i := 1; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
		case '\\':
			if i+1 < len(raw) && (raw[i+1] == 'n' || raw[i+1] == 't' || raw[i+1] == 'r') {
				i++
				continue
			}
			return false
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}

// Redact replaces every secret (of at least 4 bytes: a shorter one would redact ordinary
// words) in s, longest first, in the forms an echo shows it: as is, URL-encoded (a URL or an
// echoed query string) and JSON-escaped (an echoed body). It is the one redaction every writer
// of the capture uses: rows (error, warnings), the saved requests, the progress lines.
func Redact(s string, secrets []string) string {
	var forms []string
	for _, secret := range secrets {
		if len(secret) < 4 {
			continue
		}
		forms = append(forms, secret, url.QueryEscape(secret))
		if b, err := json.Marshal(secret); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
	}
	if len(forms) == 0 {
		return s
	}
	// One pass over s whatever the number of secrets: a strings.Replacer tries its patterns
	// in argument order at each position, so the longest, sorted first, wins.
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// maxSeenSecrets bounds the secrets a capture remembers across requests (a client sending a
// new token with every request cannot grow the proxy's memory without bound); beyond it the
// oldest are forgotten, each request's own secrets are always redacted from its own row.
const maxSeenSecrets = 1024

// credentialLike reports whether v, a value found under a credential name, is worth redacting
// from every later row by value: at least 4 bytes, and not a plain word of letters (a tool
// call's {"key":"model"} names a field, and redacting "model" everywhere after it would wreck
// the saved requests and the error texts). Keys, tokens and passwords that are words are still
// redacted where they stand and from their own request's row.
func credentialLike(v string) bool {
	if len(v) < 4 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// seenSecrets is the set of secrets a capture has seen so far, oldest first: each is redacted
// from every later row, request and progress line, not only its own request's.
type seenSecrets struct {
	list []string
	set  map[string]bool
}

// add remembers the secrets that look like credentials ([credentialLike]) and are not yet
// known.
func (s *seenSecrets) add(secrets []string) {
	if s.set == nil {
		s.set = map[string]bool{}
	}
	for _, v := range secrets {
		if !credentialLike(v) || s.set[v] {
			continue
		}
		if len(s.list) == maxSeenSecrets {
			delete(s.set, s.list[0])
			s.list = s.list[1:]
		}
		s.list = append(s.list, v)
		s.set[v] = true
	}
}
