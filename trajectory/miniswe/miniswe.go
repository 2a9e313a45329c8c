// Package miniswe reads mini-swe-agent trajectories (`<instance>.traj.json`,
// `last_mini_run.traj.json`): one JSON object {info, messages,
// trajectory_format}, or the bare message list mini's own tests compare
// against.
//
//   - mini-swe-agent-1 (mini 1.x): each assistant message holds at most one
//     action, the single fenced ```bash block mini's action_regex finds (zero
//     or several blocks were a format error and ran nothing); the next user
//     message is its observation.
//   - mini-swe-agent-1.1 (mini ≥ 2.0): the action list is in extra.actions,
//     with tool_calls answered by role "tool" messages (several per response
//     allowed) or, for text-based models, a ```mswea_bash_command block
//     answered by a user message; the run ends with a role "exit" message. A
//     response that failed to parse is not kept as an assistant message: it
//     survives as a user message with extra.interrupt_type "FormatError",
//     which becomes a text-only action here because it was a model call.
//
// A step is one assistant message with its action(s) and their observation
// message(s). Locators count messages (0-based indexes into messages).
//
// Agent is mini-swe-agent as the engine sees it: its launcher continues a
// trajectory with pvisor's runner (runner/, run with the python of mini's
// venv; launch.go) and keeps the doctor's recordings (doctor.go).
package miniswe

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// Trajectory formats (Trajectory.Format).
const (
	FormatV1   = "mini-swe-agent-1"
	FormatV11  = "mini-swe-agent-1.1"
	FormatBare = "messages" // a bare message list, no info or format tag
)

// ToolBash is mini's only tool.
const ToolBash = "bash"

// Submission markers: a command whose output starts with one of these ends
// the run (MINI_SWE_AGENT_FINAL_OUTPUT in early 1.x).
var submitMarkers = []string{"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT"}

type format struct{}

// Format is the mini-swe-agent trajectory format.
var Format trajectory.Format = format{}

// New returns the mini-swe-agent trajectory format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "json" }

// Detect: mini writes info first and trajectory_format last, so in a large
// file only info's keys are inside the head; gjson finds keys in a truncated
// head as long as they come before the cut.
func (format) Detect(head []byte) bool {
	first, head := jsondoc.First(head)
	switch first {
	case '{':
		if strings.HasPrefix(gjson.GetBytes(head, "trajectory_format").Str, "mini-swe-agent") {
			return true
		}
		if gjson.GetBytes(head, "info.mini_version").Exists() {
			return true
		}
		// info.config.agent_type / model_type / environment_type.
		return gjson.GetBytes(head, "info").IsObject() && bytes.Contains(head, []byte(`"minisweagent.`))
	case '[':
		switch gjson.GetBytes(head, "0.role").Str {
		case "system", "user", "assistant":
			return !gjson.GetBytes(head, "0.action").Exists() && !gjson.GetBytes(head, "0.observation").Exists()
		}
	}
	return false
}

// ReplayTools: mini has one tool.
func (format) ReplayTools() []string { return []string{ToolBash} }

// CheckReplayable accepts bash commands except the submission: executing it
// makes mini end the episode, so a replay could never continue after it.
// Any mention of a marker counts, because mini only checks the command's
// output, which the replay cannot know in advance.
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	if call.Name != ToolBash {
		return fmt.Errorf("mini-swe-agent has only the %q tool", ToolBash)
	}
	cmd := gjson.GetBytes(call.Arguments, "command")
	if cmd.Type != gjson.String {
		return fmt.Errorf("the arguments have no \"command\" string")
	}
	for _, m := range submitMarkers {
		if strings.Contains(cmd.Str, m) {
			return fmt.Errorf("submission command %w", trajectory.ErrEndsEpisode)
		}
	}
	return nil
}

// PrefixModelTurns counts the model responses (mini's n_calls, which its
// step_limit budgets) up to and including step afterStep's.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}
