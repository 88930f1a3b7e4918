package chat

import (
	"net/url"
	"strings"
)

// RedactedURL returns the address raw as error texts, manifests and reports name it: its password
// replaced by "xxxxx" (url.URL.Redacted), also when raw does not parse as a URL (the user info
// before the host's '@' is found by hand), and the value of every query parameter named like a
// credential ([IsCredentialParam]: ?key=, as Google's Gemini API takes its key; api_key, token,
// sig, …) too, so that a base URL's credentials reach no error, log, file or row.
func RedactedURL(raw string) string {
	return redactQuery(redactUserinfo(raw))
}

// redactQuery replaces the values of raw's credential-named query parameters by "xxxxx",
// leaving everything else, the parameters' order and escaping included, as it is.
func redactQuery(raw string) string {
	q := strings.IndexByte(raw, '?')
	if q < 0 {
		return raw
	}
	end := len(raw)
	if h := strings.IndexByte(raw[q:], '#'); h >= 0 {
		end = q + h
	}
	params := strings.Split(raw[q+1:end], "&")
	for i, kv := range params {
		name, _, ok := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if ok && IsCredentialParam(name) {
			params[i] = kv[:strings.IndexByte(kv, '=')+1] + "xxxxx"
		}
	}
	return raw[:q+1] + strings.Join(params, "&") + raw[end:]
}

// redactUserinfo is raw with the password of its user info replaced by "xxxxx".
func redactUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if u, err := url.Parse(raw); err == nil && ok {
		return u.Redacted()
	}
	if !ok {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "xxxxx" + raw[i:]
		}
		return raw
	}
	auth, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		if user, _, pass := strings.Cut(auth[:i], ":"); pass {
			auth = user + ":xxxxx" + auth[i:]
		}
	}
	return scheme + "://" + auth + path
}
