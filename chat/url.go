package chat

import (
	"net/url"
	"strings"
)

// RedactedURL returns the address raw as error texts name it: its password replaced by "xxxxx"
// (url.URL.Redacted), also when raw does not parse as a URL (the user info before the host's
// '@' is found by hand), so that a base URL's credentials reach no error, log or row.
func RedactedURL(raw string) string {
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
