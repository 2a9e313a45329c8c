package jsondoc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// The kind names below complete "found %s" and "is %s, not an object" in
// error messages, so both functions must agree on them.

// TokenKind names the kind of a token from Token or Open.
func TokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// Kind names the kind of a gjson value. A value that does not exist is
// "null", as gjson types it.
func Kind(v gjson.Result) string {
	switch v.Type {
	case gjson.JSON:
		if v.IsArray() {
			return "an array"
		}
		return "an object"
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.Null:
		return "null"
	}
	return "a boolean"
}

// First returns the first byte of a file's head that is not whitespace or a
// byte-order mark ('{' or '[' for a JSON document), with the head from that
// byte on: what Detect methods switch on. It returns 0 and an empty head
// when there is no such byte.
func First(head []byte) (byte, []byte) {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 {
		return 0, head
	}
	return head[0], head
}
