package opencode

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// replayTools are OpenCode's built-in tools whose effect on the workspace
// (or, for todowrite/todoread, whose fixed confirmation) the replay can
// regenerate. Argument names are those of the built-in tool schemas.
var replayTools = []string{
	"bash", "read", "write", "edit", "multiedit", "glob", "grep", "list",
	"patch", "apply_patch", "todowrite", "todoread",
}

// required lists the string arguments each tool cannot run without.
var required = map[string][]string{
	"bash":        {"command"},
	"read":        {"filePath"},
	"write":       {"filePath", "content"},
	"edit":        {"filePath", "oldString", "newString"},
	"multiedit":   {"filePath"},
	"glob":        {"pattern"},
	"grep":        {"pattern"},
	"patch":       {"patchText"},
	"apply_patch": {"patchText"},
}

// refusedTools explains the built-in tools the replay will not re-execute.
var refusedTools = map[string]string{
	"task":      "it runs a subagent in a child session, whose own steps are not in this file",
	"webfetch":  "its result depends on the network, which the replay does not reproduce",
	"websearch": "its result depends on the network, which the replay does not reproduce",
	"codesearch": "its result comes from a remote code search service, which the replay does not " +
		"reproduce",
	"question": "it asks the user, whose answer cannot be regenerated",
	"skill":    "it loads a skill from the original machine's configuration",
	"lsp":      "it queries a language server the replay does not start",
	"batch":    "it runs other tools in one call, which the replay does not expand",
	"invalid":  "it is OpenCode's placeholder for a call the model got wrong",
}

func (format) ReplayTools() []string { return append([]string(nil), replayTools...) }

func (format) CheckReplayable(call *trajectory.ToolCall) error {
	name := call.Name
	known := false
	for _, t := range replayTools {
		if t == name {
			known = true
			break
		}
	}
	if !known {
		if why, ok := refusedTools[name]; ok {
			return errors.New(why)
		}
		if strings.Contains(name, "_") {
			return fmt.Errorf("%q looks like an MCP tool (<server>_<tool>); MCP servers are not available to the replay", name)
		}
		return fmt.Errorf("%q is not a built-in OpenCode tool the replay can re-execute (it can: %s)",
			name, strings.Join(replayTools, ", "))
	}
	args := gjson.ParseBytes(call.Arguments)
	if !args.IsObject() {
		return errors.New("its arguments are not a JSON object")
	}
	for _, k := range required[name] {
		if v := args.Get(k); v.Type != gjson.String || (k != "content" && k != "newString" && k != "oldString" && v.Str == "") {
			return fmt.Errorf("argument %q is missing or not a string", k)
		}
	}
	switch name {
	case "multiedit":
		edits := args.Get("edits")
		if !edits.IsArray() || len(edits.Array()) == 0 {
			return errors.New("argument \"edits\" is missing or empty")
		}
		for i, e := range edits.Array() {
			if e.Get("oldString").Type != gjson.String || e.Get("newString").Type != gjson.String {
				return fmt.Errorf("edits[%d] lacks oldString/newString", i)
			}
		}
	case "todowrite":
		if !args.Get("todos").IsArray() {
			return errors.New("argument \"todos\" is missing or not an array")
		}
	}
	return nil
}
