// Package sweagent reads SWE-agent trajectories (`<instance>.traj`): one JSON
// object {trajectory, history, info, replay_config, environment} as
// DefaultAgent.save_trajectory writes it (0.x and 1.x; 1.1 records
// info.swe_agent_version). A RetryAgent file adds "attempts" beside the
// chosen attempt's keys, which are read the same way.
//
// A step is one trajectory entry {action, observation, thought, response,
// state, …}: the command SWE-agent ran in its shell and what came back. The
// i-th entry pairs with the i-th assistant message of history that is not
// a demonstration (is_demo), which supplies the tool call's id and name
// under function calling. The last entry may have no history message (1.0
// appends the submission step to the trajectory only); a history message
// beyond the trajectory is a response whose action never ran, an
// incomplete step. Locators count trajectory entries (0-based).
//
//   - ToolCall.Name is the function name when recorded, else the action's
//     first word (SWE-agent's command: find_file, open, edit, submit…);
//     Arguments is {"action": <the command line as run>}.
//   - Observation.Content is the entry's observation. SWE-agent records no
//     error flag, so IsError is always false.
//   - Action.Text is the entry's thought (its response when there is none).
//
// pvisor prepares SWE-agent prefixes but runs none: SWE-agent 1.x is not
// on PyPI. The only release there, sweagent 0.0.1, is the 2024 Docker-only
// prototype (gymnasium environment, no SWE-ReX, no tool bundles), which
// cannot run what a 1.x trajectory ran; SWE-ReX alone (swe-rex) is only the
// sandbox, not the agent's commands. So SWE-agent's own runtime, the only
// faithful executor of its tool bundles, cannot be installed from the
// registries pvisor is tested with.
//
// Agent is SWE-agent as the engine sees it: replayed and rebuilt, not
// continued (no launcher).
package sweagent

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// Format is the label of Trajectory.Format.
const Format = "swe-agent-traj"

type format struct{}

// New returns the SWE-agent trajectory format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "traj" }

// Detect: entries start with "action" and "observation" and a file starts
// with "environment" (≤ 1.0) or "trajectory" (1.x), so the keys are inside
// the head even when an entry's query is longer than it.
func (format) Detect(head []byte) bool {
	first, head := jsondoc.First(head)
	if first != '{' {
		return false
	}
	e := gjson.GetBytes(head, "trajectory.0")
	if e.Exists() {
		// The observation may be cut off with the head.
		return e.IsObject() && e.Get("action").Exists()
	}
	env := gjson.GetBytes(head, "environment")
	return env.Type == gjson.String && bytes.Contains(head, []byte(`"trajectory"`)) && bytes.Contains(head, []byte(`"action"`))
}

// ReplayTools is empty: pvisor re-executes no SWE-agent action (see the
// package comment).
func (format) ReplayTools() []string { return nil }

// CheckReplayable refuses the actions that end the episode: submit and the
// exit_* autosubmissions (exit_cost, exit_context, exit_format, …). A
// prefix holding one could never be continued. Every other command is a
// line of SWE-agent's shell, which its own runtime would run again.
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	action := gjson.GetBytes(call.Arguments, "action")
	if action.Type != gjson.String {
		return fmt.Errorf("the arguments have no \"action\" string")
	}
	switch cmd := command(action.Str); {
	case cmd == "submit":
		return fmt.Errorf("submit %w", trajectory.ErrEndsEpisode)
	case strings.HasPrefix(cmd, "exit_"):
		return fmt.Errorf("%s is SWE-agent ending the episode on its own: it %w", cmd, trajectory.ErrEndsEpisode)
	}
	return nil
}

// command is the first word of an action, SWE-agent's command name.
func command(action string) string {
	f := strings.Fields(action)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// PrefixModelTurns: each trajectory entry is one model query.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// RefuseRun refuses --replay-only and continuation before anything runs.
func (format) RefuseRun(_ *trajectory.Trajectory, continuation bool) error {
	what := "re-running a SWE-agent prefix"
	if continuation {
		what = "continuing SWE-agent"
	}
	return fmt.Errorf("%s needs SWE-agent's own runtime (its tool bundles run inside SWE-ReX), which cannot be installed here: SWE-agent 1.x is not published on PyPI (the only release there, sweagent 0.0.1, is the 2024 Docker-only prototype without SWE-ReX or tool bundles); use --prepare-only", what)
}
