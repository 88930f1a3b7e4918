package chat

import "strings"

// credentialNames are the names (of a JSON field, an HTTP header or a URL's query parameter)
// that carry a credential, compared lower-case with '-' and '_' removed (api_key, api-key,
// apiKey and APIKEY are one name): a provider's key (OpenAI's and Anthropic's api_key,
// Anthropic's x-api-key, Gemini's key and x-goog-api-key, Azure's api-key), OAuth's access,
// refresh and id tokens and client secret, a password, a cookie.
var credentialNames = map[string]bool{
	"key": true, "apikey": true, "xapikey": true, "xgoogapikey": true, "apisecret": true,
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true, "authtoken": true,
	"sessiontoken": true, "bearertoken": true, "bearer": true, "auth": true, "authorization": true,
	"proxyauthorization": true, "password": true, "passwd": true, "pwd": true, "passphrase": true,
	"secret": true, "clientsecret": true, "secretkey": true, "secretaccesskey": true, "accesskey": true,
	"privatekey": true, "credential": true, "credentials": true, "cookie": true,
}

// credentialSuffixes are the endings that make a longer name a credential's (openai_api_key;
// github_token is not one: "token" alone is, but a name ending in token may be a chat
// template's bos_token).
var credentialSuffixes = []string{"apikey", "secret", "password", "passwd", "accesstoken", "refreshtoken", "authtoken", "sessiontoken", "secretkey", "privatekey"}

// IsCredentialName reports whether a JSON field's, an HTTP header's or a query parameter's
// name looks like a credential's: one of credentialNames, or a name ending in one of
// credentialSuffixes, compared without case, '-' and '_'; the plural of each counts too (keys,
// api_keys, passwords hold several), but for "tokens" (llama-server's token ids).
// prompt_cache_key, idempotency_key and max_tokens are not credential names. It is the one
// list every redaction of the lab follows: [RedactedURL]'s, and the proxy's of saved bodies,
// headers and URLs.
func IsCredentialName(name string) bool {
	if len(name) > 64 { // no credential's name is this long
		return false
	}
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '-' || c == '_':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	n := string(b)
	single := strings.TrimSuffix(n, "s")
	if credentialNames[n] || credentialNames[single] && n != "tokens" {
		return true
	}
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(n, s) || strings.HasSuffix(single, s) {
			return true
		}
	}
	return false
}

// IsCredentialParam reports whether a URL's query parameter carries a credential: a
// credential name ([IsCredentialName]), or a signed URL's sig or signature (not a body field's:
// Anthropic's thinking blocks carry a signature that is no credential).
func IsCredentialParam(name string) bool {
	if n := strings.ToLower(name); n == "sig" || n == "signature" {
		return true
	}
	return IsCredentialName(name)
}
