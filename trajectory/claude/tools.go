package claude

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// replayed maps each tool the replay re-executes to the arguments it cannot
// do without. TodoWrite only updates the agent's own list; its result is a
// fixed confirmation, so replaying it means writing that confirmation.
// NotebookEdit is left out: re-creating Claude's cell edits and their
// native result text is not implemented by the runner yet.
var replayed = map[string][]arg{
	"Bash":      {{"command", gjson.String}},
	"Read":      {{"file_path", gjson.String}},
	"Write":     {{"file_path", gjson.String}, {"content", gjson.String}},
	"Edit":      {{"file_path", gjson.String}, {"old_string", gjson.String}, {"new_string", gjson.String}},
	"MultiEdit": {{"file_path", gjson.String}, {"edits", gjson.JSON}},
	"Glob":      {{"pattern", gjson.String}},
	"Grep":      {{"pattern", gjson.String}},
	"LS":        {{"path", gjson.String}},
	"TodoWrite": {{"todos", gjson.JSON}},
}

type arg struct {
	name string
	typ  gjson.Type
}

// notReplayed says why well-known tools are refused.
var notReplayed = map[string]string{
	"Task":            "it runs a subagent, whose own transcript would have to be replayed",
	"Agent":           "it runs a subagent, whose own transcript would have to be replayed",
	"WebFetch":        "its result comes from the network and cannot be regenerated in the sandbox",
	"WebSearch":       "its result comes from the network and cannot be regenerated in the sandbox",
	"AskUserQuestion": "it asks the user interactively",
	"ExitPlanMode":    "it is answered by the user in the CLI's plan mode",
	"EnterPlanMode":   "it is answered by the user in the CLI's plan mode",
	"BashOutput":      "it reads a background shell, and background shells are not replayed yet",
	"KillBash":        "it stops a background shell, and background shells are not replayed yet",
	"KillShell":       "it stops a background shell, and background shells are not replayed yet",
	"TaskOutput":      "it reads a background task, and background tasks are not replayed yet",
	"TaskStop":        "it stops a background task, and background tasks are not replayed yet",
	"NotebookEdit":    "notebook cell edits are not replayed yet",
	"SlashCommand":    "it runs a slash command inside the CLI",
	"Skill":           "it loads a skill inside the CLI",
}

var replayOrder = []string{"Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "TodoWrite"}

// ReplayTools implements trajectory.Format.
func (*Format) ReplayTools() []string { return slices.Clone(replayOrder) }

// CheckReplayable implements trajectory.Format.
func (*Format) CheckReplayable(call *trajectory.ToolCall) error {
	args, ok := replayed[call.Name]
	if !ok {
		if why, known := notReplayed[call.Name]; known {
			return errors.New(why)
		}
		if strings.HasPrefix(call.Name, "mcp__") {
			return errors.New("it is an MCP tool, served by an external server the replay does not run")
		}
		return fmt.Errorf("the replay only re-executes %s", strings.Join(replayOrder, ", "))
	}
	in := gjson.ParseBytes(call.Arguments)
	if !in.IsObject() {
		return errors.New("its input is not a JSON object")
	}
	for _, a := range args {
		v := in.Get(a.name)
		if v.Type != a.typ || (a.typ == gjson.JSON && !v.IsArray()) {
			return fmt.Errorf("its input has no %s %s", a.name, kindName(a.typ))
		}
	}
	if call.Name == "Bash" && in.Get("run_in_background").Type == gjson.True {
		return errors.New("it starts a background shell (run_in_background), and background shells are not replayed yet")
	}
	if call.Name == "Read" {
		if ext := strings.ToLower(path.Ext(in.Get("file_path").Str)); richExt[ext] {
			return fmt.Errorf("it reads a %s file, whose image, document or notebook result is not regenerated", ext)
		}
	}
	return nil
}

func kindName(t gjson.Type) string {
	if t == gjson.JSON {
		return "array"
	}
	return "string"
}
