package kimi

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// What Kimi Code 2.1.0 puts in the tool message for a tool.result (its
// renderToolResultForModel): the wire log keeps the raw result
// {output, note, isError, durationMs}, the model gets this rendering.
const (
	toolErrorStatus      = "<system>ERROR: Tool execution failed.</system>"
	toolEmptyStatus      = "<system>Tool output is empty.</system>"
	toolEmptyErrorStatus = "<system>ERROR: Tool execution failed. Tool output is empty.</system>"
	toolOutputEmptyText  = "Tool output is empty."
)

// wallTimeTools get a "Wall time: S seconds" header line (MCP tools too).
var wallTimeTools = map[string]bool{"Agent": true, "AgentSwarm": true, "Bash": true, "FetchURL": true,
	"Glob": true, "Grep": true, "WebSearch": true}

func rendersWallTime(tool string) bool {
	return wallTimeTools[tool] || strings.HasPrefix(tool, "mcp__")
}

// renderResult is the model-visible text of a result of tool. Content parts
// that are not text (images) are left out: pvisor compares text only.
func renderResult(tool string, res gjson.Result) string {
	isErr := res.Get("isError").Bool()
	var parts []string
	out := res.Get("output")
	single, isSingle := out.Str, out.Type == gjson.String
	if out.IsArray() {
		arr := out.Array()
		if len(arr) == 1 && arr[0].Get("type").Str == "text" {
			single, isSingle = arr[0].Get("text").Str, true
		}
	}
	switch {
	case isSingle && isErr && single == "":
		parts = []string{toolEmptyErrorStatus}
	case isSingle && isErr:
		parts = []string{toolErrorStatus + "\n" + single}
	case isSingle && (strings.TrimSpace(single) == "" || strings.TrimSpace(single) == toolOutputEmptyText):
		parts = []string{toolEmptyStatus}
	case isSingle:
		parts = []string{single}
	default:
		empty := true
		var texts []string
		out.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str != "text" || strings.TrimSpace(p.Get("text").Str) != "" {
				empty = false
			}
			if p.Get("type").Str == "text" {
				texts = append(texts, p.Get("text").Str)
			}
			return true
		})
		switch {
		case empty && isErr:
			parts = []string{toolEmptyErrorStatus}
		case empty:
			parts = []string{toolEmptyStatus}
		case isErr:
			parts = append([]string{toolErrorStatus}, texts...)
		default:
			parts = texts
		}
	}
	if d := res.Get("durationMs"); d.Exists() && rendersWallTime(tool) {
		header := "Wall time: " + strconv.FormatFloat(d.Float()/1e3, 'f', 3, 64) + " seconds"
		if len(parts) > 0 {
			parts[0] = header + "\n" + parts[0]
		} else {
			parts = []string{header}
		}
	}
	if note := res.Get("note").Str; note != "" {
		if len(parts) == 1 {
			parts[0] += "\n" + note
		} else {
			parts = append(parts, note)
		}
	}
	return strings.Join(parts, "")
}

// NormalizeObservation masks the run-to-run field of a rendered result:
// the measured wall time.
func (format) NormalizeObservation(content string) string {
	return wallTimeRe().ReplaceAllString(content, "Wall time: <masked> seconds")
}
