package envelope

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// LiveTurns counts the model responses among OpenAI Responses API input
// items past the boundary: runs of model items (assistant messages,
// reasoning, calls) separated by anything else. The step budget is counted
// in these.
func LiveTurns(items []json.RawMessage) int {
	n, inRun := 0, false
	for _, raw := range items {
		it := gjson.ParseBytes(raw)
		typ, role := it.Get("type").Str, it.Get("role").Str
		switch {
		case (typ == "message" || typ == "") && role == "assistant", typ == "reasoning", strings.HasSuffix(typ, "_call"):
			if !inRun {
				n++
				inRun = true
			}
		default:
			inRun = false
		}
	}
	return n
}
