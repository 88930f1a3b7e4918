// Package wire is the HTTP layer the backends share: posting a JSON body, turning an answer's
// status into a [chat.APIError] (its message, the server's Retry-After, the API key redacted),
// reading server-sent events and JSON lines within the reply limit's wire bound
// ([chat.WireLimit]), quoting a body for an error message, and encoding JSON without HTML
// escaping. It knows no API's fields: each backend decodes its own events and lines.
package wire
