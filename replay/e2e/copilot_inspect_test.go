package e2e

import "github.com/tidwall/gjson"

func init() { inspectors["copilot"] = inspectCopilot }

// inspectCopilot counts the tool requests of assistant.message events and
// collects tool.execution_complete results that did not succeed.
func inspectCopilot(native []byte) (int, []string, error) {
	n := 0
	var failed []string
	_, err := countJSONL(native, "", func(l gjson.Result) bool {
		switch l.Get("type").String() {
		case "assistant.message":
			n += int(l.Get("data.toolRequests.#").Int())
		case "tool.execution_complete":
			if !l.Get("data.success").Bool() {
				failed = append(failed, l.Get("data").Raw)
			}
		}
		return false
	})
	return n, failed, err
}
