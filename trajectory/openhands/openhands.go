// Package openhands reads OpenHands V0 trajectories: the JSON array of events
// that "download trajectory" / save_trajectory_path write and that
// ReplayManager (config replay_trajectory_path) replays, and the `history` of
// one evaluation output.jsonl line. V1 (software-agent-sdk, OpenHands 1.x)
// events are read as JSONL, one event per line (v1.go).
//
// A step is one model response: the agent action events that share
// tool_call_metadata.model_response.id (parallel calls arrive as consecutive
// actions, each followed by its observation), with the observations whose
// `cause` is the action's id. Locators count events (0-based indexes into the
// array or history).
//
//   - ToolCall.Name is the action type (run, read, edit, write, think,
//     run_ipython, browse…, finish) and Arguments its args, without
//     "thought": OpenHands copies the response text there, so it becomes
//     Action.Text (the response's message content when recorded). think
//     keeps it, since there it is the argument.
//   - An agent `message` action is a text-only response. `finish` is a call
//     that never gets an observation, so the response is incomplete and a
//     boundary can never lie beyond it (the replayed agent would stop there).
//   - Not model responses: `system`, `recall`, `change_agent_state` and
//     condenser actions, user and environment events, and an `error`
//     observation without a cause (a response whose tool call failed
//     validation: it has no action to replay).
//   - Observation.Content is the observation's `content` (its `message` when
//     there is none); IsError for error / user_rejected observations and for
//     commands with a non-zero exit code (-1 = still running or timed out).
//   - 2024-era flat events (fields beside "action", no id, no cause) decode,
//     pairing each action with the observation right after it, but cannot be
//     written as a prefix: today's ReplayManager does not load them.
//
// Agent is OpenHands as the engine sees it: its launcher continues a V1
// conversation with pvisor's runner over openhands-sdk (runner/,
// launch.go); an evaluation output.jsonl is a trajectory.MultiSession.
package openhands

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// Sub-formats reported in Trajectory.Format.
const (
	FormatEvents           = "v0-events"             // a JSON array of events
	FormatEvalOutput       = "v0-eval-output"        // one output.jsonl line with history
	FormatLegacyEvents     = "v0-legacy-events"      // 2024 flat events (no args/extras)
	FormatLegacyEvalOutput = "v0-legacy-eval-output" // the same inside output.jsonl
)

// Native action types the replay re-executes. OpenHands' own runtime runs
// them again through ReplayManager, so what counts is what that runtime can
// reproduce without a model or a browser.
const (
	ActionRun     = "run"
	ActionRead    = "read"
	ActionEdit    = "edit"
	ActionWrite   = "write"
	ActionThink   = "think"
	ActionIPython = "run_ipython"
)

type format struct{}

// Format is the OpenHands V0 trajectory format.
var Format trajectory.Format = format{}

// New returns the OpenHands V0 trajectory format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "json" }

// Detect claims V0 event arrays, output.jsonl lines with a history, and the
// V1 files Decode refuses (so the user gets that explanation rather than
// "unknown format"). gjson finds keys in a truncated head as long as they
// come before the cut.
func (format) Detect(head []byte) bool {
	first, head := jsondoc.First(head)
	switch first {
	case '[':
		first := gjson.GetBytes(head, "0")
		if first.Exists() && !first.IsObject() {
			return false
		}
		if gjson.GetBytes(head, "0.role").Exists() {
			return false // a chat message list (mini-swe-agent)
		}
		return isV0Event(head, "0.") || isV1Event(head, "0.")
	case '{':
		line := head
		if i := bytes.IndexByte(line, '\n'); i >= 0 && isV1Event(line[:i], "") {
			return true
		}
		if isV1Event(head, "") || isV1BaseState(head) {
			return true
		}
		// One V0 event file from sessions/<sid>/events/, refused by Decode.
		if gjson.GetBytes(head, "id").Type == gjson.Number && isV0Event(head, "") &&
			!gjson.GetBytes(head, "type").Exists() {
			return true
		}
		// An evaluation output.jsonl line: instance metadata, then history.
		return bytes.Contains(head, []byte(`"history"`)) && bytes.Contains(head, []byte(`"instruction"`)) &&
			(bytes.Contains(head, []byte(`"action"`)) || bytes.Contains(head, []byte(`"observation"`)))
	}
	return false
}

func isV0Event(head []byte, prefix string) bool {
	if gjson.GetBytes(head, prefix+"role").Exists() {
		return false
	}
	a, o := gjson.GetBytes(head, prefix+"action"), gjson.GetBytes(head, prefix+"observation")
	if a.Type == gjson.String || o.Type == gjson.String {
		return true
	}
	// The first event may be longer than the head (a system prompt); its
	// leading keys still say what it is.
	src := gjson.GetBytes(head, prefix+"source").Str
	return gjson.GetBytes(head, prefix+"id").Type == gjson.Number && (src == "user" || src == "agent" || src == "environment")
}

func isV1Event(head []byte, prefix string) bool {
	kind := gjson.GetBytes(head, prefix+"kind").Str
	src := gjson.GetBytes(head, prefix+"source").Str
	return gjson.GetBytes(head, prefix+"id").Type == gjson.String && kind != "" &&
		(src == "user" || src == "agent" || src == "environment")
}

func isV1BaseState(head []byte) bool {
	return gjson.GetBytes(head, "execution_status").Exists() && gjson.GetBytes(head, "agent.llm").Exists()
}

// ReplayTools lists the action types the replay re-executes (V0 action
// names and V1 tool names).
func (format) ReplayTools() []string {
	return []string{ActionRun, ActionRead, ActionEdit, ActionThink, ToolTerminal, ToolFileEditor}
}

// CheckReplayable accepts the actions replay.go re-runs with OpenHands'
// documented semantics: commands, the file editor (and V0's oh_aci reads
// and edits), and think. The rest is refused with the reason, so a prefix
// holding one needs --allow-stale-observations (quality degraded).
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	args := gjson.ParseBytes(call.Arguments)
	switch call.Name {
	case ActionThink:
		return nil
	case ActionRun, ToolTerminal:
		if args.Get("is_input").Bool() {
			return fmt.Errorf("it sends input to a command still running in the terminal, which the replay does not keep alive")
		}
		if args.Get("reset").Bool() {
			return fmt.Errorf("it resets OpenHands' terminal session, which the replay does not keep")
		}
		if args.Get("command").Type != gjson.String || strings.TrimSpace(args.Get("command").Str) == "" {
			return fmt.Errorf("an empty command asks OpenHands' terminal for more output of a running command, which the replay does not keep alive")
		}
		if args.Get("is_background").Bool() {
			return fmt.Errorf("background commands keep running in OpenHands' terminal, which the replay does not keep alive")
		}
		return nil
	case ActionRead:
		if src := args.Get("impl_source").Str; src != "oh_aci" {
			return fmt.Errorf("a FileReadAction with impl_source %q reads through OpenHands' own runtime (no documented result text); only oh_aci reads are re-run", src)
		}
		return nil
	case ActionEdit, ToolFileEditor:
		if call.Name == ActionEdit {
			switch args.Get("impl_source").Str {
			case "llm_based_edit":
				return fmt.Errorf("an LLM-based edit asks a draft-editor model to apply the change, so its result is not reproducible")
			case "oh_aci":
			default:
				return fmt.Errorf("only oh_aci edits (str_replace_editor) are re-run")
			}
		}
		switch cmd := args.Get("command").Str; cmd {
		case "view", "create", "str_replace", "insert", "undo_edit":
			return nil
		default:
			return fmt.Errorf("file editor command %q is not one OpenHands' file editor has", cmd)
		}
	case ActionIPython:
		return fmt.Errorf("IPython cells run in OpenHands' Jupyter kernel, whose results pvisor does not re-implement")
	case ActionWrite:
		return fmt.Errorf("a FileWriteAction's result text comes from OpenHands' runtime, which documents none; pvisor does not re-implement it")
	case "task_tracker":
		return fmt.Errorf("the task tracker keeps its list in the conversation's state, which a replay in a new sandbox does not have")
	case "browse", "browse_interactive", "browser_navigate", "browser_click", "browser_type", "browser_get_state",
		"browser_get_content", "browser_scroll", "browser_go_back", "browser_list_tabs", "browser_switch_tab", "browser_close_tab":
		return fmt.Errorf("browsing needs OpenHands' browser, which the replay runs without, and a live web page")
	case "call_tool_mcp":
		return fmt.Errorf("MCP tools run on an external server the replay cannot reproduce")
	case "delegate":
		return fmt.Errorf("delegation starts a sub-agent, which needs a model")
	case "finish", "reject":
		return fmt.Errorf("%s %w", call.Name, trajectory.ErrEndsEpisode)
	}
	return fmt.Errorf("OpenHands action %q is not one the replay re-executes (%s)", call.Name,
		strings.Join(format{}.ReplayTools(), ", "))
}

// PrefixModelTurns counts the model responses up to and including step
// afterStep's.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}
