package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tidwall/gjson"
)

// addFields returns body with fields set at its top level: a new member is
// appended before the closing brace, an object member is merged with an
// object value (the new keys win), anything else is replaced. The rest of
// the body keeps its bytes. body must be a JSON object; fields are applied
// in key order so the result does not depend on map order.
func addFields(body []byte, fields map[string]json.RawMessage) ([]byte, error) {
	if len(fields) == 0 {
		return body, nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' || !gjson.ValidBytes(trimmed) {
		return nil, fmt.Errorf("request body is not a JSON object")
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := append([]byte(nil), trimmed...)
	for _, k := range keys {
		v := fields[k]
		cur := gjson.GetBytes(out, gjson.Escape(k))
		switch {
		case !cur.Exists():
			name, _ := json.Marshal(k)
			end := bytes.LastIndexByte(out, '}')
			member := append(append(name, ':'), v...)
			if gjson.ParseBytes(out).Get("@keys.#").Int() > 0 {
				member = append([]byte{','}, member...)
			}
			out = append(out[:end:end], append(member, '}')...)
		case cur.IsObject() && gjson.ParseBytes(v).IsObject():
			merged, err := addFields([]byte(cur.Raw), objectFields(v))
			if err != nil {
				return nil, err
			}
			out = splice(out, cur.Index, len(cur.Raw), merged)
		default:
			out = splice(out, cur.Index, len(cur.Raw), v)
		}
	}
	return out, nil
}

func objectFields(obj json.RawMessage) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	gjson.ParseBytes(obj).ForEach(func(k, v gjson.Result) bool {
		m[k.Str] = json.RawMessage(v.Raw)
		return true
	})
	return m
}

func splice(b []byte, at, n int, with []byte) []byte {
	out := make([]byte, 0, len(b)-n+len(with))
	out = append(out, b[:at]...)
	out = append(out, with...)
	return append(out, b[at+n:]...)
}
