package e2e

import "github.com/tidwall/gjson"

// Kimi Code's recording is checked from its own file (see agents_kimi_test.go).
func init() { inspectors["kimi"] = inspectKimi }

// inspectKimi counts tool.call loop events and collects tool.results marked
// isError.
func inspectKimi(native []byte) (int, []string, error) {
	n := 0
	var failed []string
	_, err := countJSONL(native, "", func(l gjson.Result) bool {
		if l.Get("type").String() != "context.append_loop_event" {
			return false
		}
		ev := l.Get("event")
		switch ev.Get("type").String() {
		case "tool.call":
			n++
		case "tool.result":
			if ev.Get("result.isError").Bool() {
				failed = append(failed, ev.Get("result").Raw)
			}
		}
		return false
	})
	return n, failed, err
}
