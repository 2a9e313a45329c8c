package codex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Native tool names the replay re-executes.
const (
	ToolShell          = "shell"            // 0.3x-0.5x: {"command":[argv…],"workdir","timeout_ms"}
	ToolContainerExec  = "container.exec"   // older alias of shell, same arguments
	ToolShellCommand   = "shell_command"    // {"command":"<script>","workdir","login","timeout_ms"}
	ToolLocalShellCall = "local_shell_call" // Responses API local_shell item: {"type":"exec","command":[argv…],…}
	ToolExecCommand    = "exec_command"     // unified exec: {"cmd","workdir","yield_time_ms","max_output_tokens","tty",…}
	ToolWriteStdin     = "write_stdin"      // {"session_id":N,"chars":"…"} into a live exec_command session
	ToolApplyPatch     = "apply_patch"      // freeform custom tool (input is the patch) or {"input":"…"}
	ToolUpdatePlan     = "update_plan"      // bookkeeping; Codex answers "Plan updated"
)

// PlanUpdated is update_plan's fixed result text (0.40 and 0.125 rollouts
// alike record exactly this output).
const PlanUpdated = "Plan updated"

func (format) ReplayTools() []string {
	return []string{ToolShell, ToolContainerExec, ToolShellCommand, ToolLocalShellCall,
		ToolExecCommand, ToolWriteStdin, ToolApplyPatch, ToolUpdatePlan}
}

// CheckReplayable accepts the tools above when their arguments have the shape
// the run layer needs, and says why anything else cannot be re-executed.
func (format) CheckReplayable(c *trajectory.ToolCall) error {
	args := string(c.Arguments)
	obj := gjson.Parse(args)
	needObject := func() error {
		if !obj.IsObject() {
			return fmt.Errorf("arguments are not a JSON object (%s)", short(args))
		}
		return nil
	}
	switch c.Name {
	case ToolShell, ToolContainerExec, ToolLocalShellCall:
		if err := needObject(); err != nil {
			return err
		}
		if c.Name == ToolLocalShellCall {
			if t := obj.Get("type").Str; t != "exec" {
				return fmt.Errorf("local_shell_call action type %q is not \"exec\"", t)
			}
		}
		return checkArgv(obj.Get("command"))
	case ToolShellCommand:
		if err := needObject(); err != nil {
			return err
		}
		if cmd := obj.Get("command"); cmd.Type != gjson.String || strings.TrimSpace(cmd.Str) == "" {
			return errors.New("\"command\" is not a non-empty string")
		}
	case ToolExecCommand:
		if err := needObject(); err != nil {
			return err
		}
		if cmd := obj.Get("cmd"); cmd.Type != gjson.String || strings.TrimSpace(cmd.Str) == "" {
			return errors.New("\"cmd\" is not a non-empty string")
		}
	case ToolWriteStdin:
		if err := needObject(); err != nil {
			return err
		}
		if id := obj.Get("session_id"); id.Type != gjson.Number && (id.Type != gjson.String || id.Str == "") {
			return errors.New("\"session_id\" is missing; write_stdin must name a live exec_command session")
		}
		if ch := obj.Get("chars"); ch.Exists() && ch.Type != gjson.String {
			return errors.New("\"chars\" is not a string")
		}
	case ToolApplyPatch:
		patch := obj
		if obj.IsObject() {
			patch = obj.Get("input")
		}
		if patch.Type != gjson.String || !strings.Contains(patch.Str, "*** Begin Patch") {
			return errors.New("input is not an apply_patch patch (no \"*** Begin Patch\")")
		}
	case ToolUpdatePlan:
		if err := needObject(); err != nil {
			return err
		}
		if !obj.Get("plan").IsArray() {
			return errors.New("\"plan\" is not an array")
		}
	case "view_image":
		return errors.New("view_image attaches an image to the conversation; pvisor cannot regenerate image inputs")
	case "tool_search":
		return errors.New("tool_search returns the CLI's deferred tool definitions, which depend on its configuration, not on the sandbox")
	case "web_search", "web_search_call", "image_generation":
		return fmt.Errorf("%s runs on the model provider's side, not in the sandbox", c.Name)
	default:
		if server, tool, ok := strings.Cut(c.Name, "__"); ok && server != "" && tool != "" {
			return fmt.Errorf("MCP tool %q of server %q runs in an MCP server outside the sandbox; pvisor cannot re-execute it", tool, server)
		}
		return fmt.Errorf("pvisor does not re-execute the Codex tool %q (it replays %s)", c.Name,
			strings.Join(format{}.ReplayTools(), ", "))
	}
	return nil
}

func checkArgv(cmd gjson.Result) error {
	if !cmd.IsArray() {
		return errors.New("\"command\" is not an argv array")
	}
	n := 0
	bad := false
	cmd.ForEach(func(_, v gjson.Result) bool {
		n++
		bad = v.Type != gjson.String
		return !bad
	})
	if n == 0 || bad {
		return errors.New("\"command\" is not a non-empty array of strings")
	}
	return nil
}

func short(s string) string {
	for i := range s {
		if i >= 60 {
			return s[:i] + "…"
		}
	}
	return s
}
