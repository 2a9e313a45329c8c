package envelope

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
)

// JSONString is s as a JSON string, with HTML characters as they are (the
// way the CLIs write them).
func JSONString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Splice replaces the bytes of v (a value inside body) with repl, leaving
// every other byte of body as it was: the forwarded request differs from
// what the CLI sent only where the envelope was.
func Splice(body []byte, v gjson.Result, repl string) ([]byte, error) {
	start, end := v.Index, v.Index+len(v.Raw)
	if v.Index <= 0 || end > len(body) || string(body[start:end]) != v.Raw {
		return nil, bridge.Refuse("internal error: cannot locate the input array in the request body")
	}
	out := make([]byte, 0, len(body)-len(v.Raw)+len(repl))
	out = append(out, body[:start]...)
	out = append(out, repl...)
	return append(out, body[end:]...), nil
}

// Clip shortens an id or a name a refusal quotes to 80 bytes: a refusal
// names items, it does not reproduce them.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
