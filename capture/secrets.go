package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Redacted is what replaces a credential wherever the lab writes: a field's value in a saved
// request body, a secret's bytes in an error, a warning or a progress line.
const Redacted = "[redacted]"

// credentialNames are the JSON field and query parameter names that carry a credential,
// compared lower-case with '-' and '_' removed (api_key, api-key, apiKey and APIKEY are one
// name): a provider's key (OpenAI's and Anthropic's api_key, Gemini's key, Azure's api-key),
// OAuth's access, refresh and id tokens and client secret, a password, a cookie.
var credentialNames = map[string]bool{
	"key": true, "apikey": true, "xapikey": true, "xgoogapikey": true, "apisecret": true,
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true, "authtoken": true,
	"sessiontoken": true, "bearertoken": true, "bearer": true, "auth": true, "authorization": true,
	"proxyauthorization": true, "password": true, "passwd": true, "pwd": true, "passphrase": true,
	"secret": true, "clientsecret": true, "secretkey": true, "secretaccesskey": true, "accesskey": true,
	"privatekey": true, "credential": true, "credentials": true, "cookie": true,
}

// credentialSuffixes are the endings that make a longer name a credential's (openai_api_key,
// github_token is not one: "token" alone is, but a name ending in token may be a chat
// template's bos_token).
var credentialSuffixes = []string{"apikey", "secret", "password", "passwd", "accesstoken", "refreshtoken", "authtoken", "sessiontoken", "secretkey", "privatekey"}

// isCredentialName reports whether a JSON field's name looks like a credential's (see
// credentialNames). prompt_cache_key, idempotency_key and max_tokens do not.
func isCredentialName(name string) bool {
	n := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(name))
	if credentialNames[n] {
		return true
	}
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// isCredentialParam reports whether a query parameter carries a credential: a credential name,
// or a signed URL's sig or signature (not a body field's: Anthropic's thinking blocks carry a
// signature that is no credential).
func isCredentialParam(name string) bool {
	if n := strings.ToLower(name); n == "sig" || n == "signature" {
		return true
	}
	return isCredentialName(name)
}

// RedactBody returns a JSON body with the value of every credential-named field (see
// isCredentialName), at any depth, replaced by the string "[redacted]", and the values it
// replaced (a string as decoded and as written, a number as written), for [Redact] to remove
// wherever they appear later. A field whose value is an object or an array is walked (the fields
// under it are redacted by their own names: a tool's JSON schema with a "password" property
// keeps its shape); true, false and null are kept. A string holding a JSON object or array (a
// tool call's arguments in OpenAI's Chat Completions and Responses APIs) is redacted the same
// way and written back as a string. Everything else is kept byte for byte. A body
// that is not JSON is returned unchanged with no secrets: nothing in it can be found by name.
func RedactBody(body []byte) ([]byte, []string) {
	type frame struct{ object, wantKey bool }
	type span struct {
		start, end int64
		with       string
	}
	var (
		stack   []frame
		secret  bool // the value to come is a credential-named field's
		spans   []span
		secrets []string
	)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return body, nil
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				stack[n-1].wantKey = false
				secret = isCredentialName(k)
				continue
			}
		}
		valueDone := true
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, frame{object: v == '{', wantKey: v == '{'})
				valueDone = false
			default:
				stack = stack[:len(stack)-1]
			}
		case string, json.Number:
			start, end := before, dec.InputOffset()
			for start < end && strings.IndexByte(" \t\r\n:,", body[start]) >= 0 {
				start++
			}
			str, isString := v.(string)
			switch {
			case secret:
				spans = append(spans, span{start, end, `"` + Redacted + `"`})
				raw := string(body[start:end])
				if isString {
					secrets = append(secrets, str)
					raw = strings.TrimSuffix(strings.TrimPrefix(raw, `"`), `"`)
				}
				secrets = append(secrets, raw)
			case isString && looksLikeJSON(str):
				// JSON in a string (a tool call's arguments in OpenAI's APIs): redacted the
				// same way, and written back as a string.
				if inner, found := RedactBody([]byte(str)); len(found) > 0 {
					enc, _ := json.Marshal(string(inner))
					spans = append(spans, span{start, end, string(enc)})
					secrets = append(secrets, found...)
				}
			}
		}
		secret = false
		if n := len(stack); valueDone && n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	if len(spans) == 0 {
		return body, secrets
	}
	var out bytes.Buffer
	out.Grow(len(body))
	last := int64(0)
	for _, sp := range spans {
		out.Write(body[last:sp.start])
		out.WriteString(sp.with)
		last = sp.end
	}
	out.Write(body[last:])
	return out.Bytes(), slices.Compact(secrets)
}

// looksLikeJSON reports whether a string's text may be a JSON object or array.
func looksLikeJSON(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	return s != "" && (s[0] == '{' || s[0] == '[')
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

// seenSecrets is the set of secrets a capture has seen so far, oldest first: each is redacted
// from every later row, request and progress line, not only its own request's.
type seenSecrets struct {
	list []string
	set  map[string]bool
}

// add remembers the secrets of at least 4 bytes that are not yet known.
func (s *seenSecrets) add(secrets []string) {
	if s.set == nil {
		s.set = map[string]bool{}
	}
	for _, v := range secrets {
		if len(v) < 4 || s.set[v] {
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
