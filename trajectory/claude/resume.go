package claude

import (
	"bytes"
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// resume: --resume in print mode with the prompt on stdin; --fork-session
// gives the continuation a new id. The session id is in the stream-json
// system event.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "system", "session_id"),
	Text:      outputTextOf,
}

func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	args := []string{"--print", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--resume", c.SID}
	if c.Fork {
		args = append(args, "--fork-session")
	}
	meta := map[string]any{}
	data, err := os.ReadFile(c.Main)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	if m := recordedModel(data, c.Args); m != "" {
		args = append(args, "--model", m)
		meta["model_flag"] = map[string]any{"model": m, "source": "the model of the session's last response"}
	}
	args = append(args, c.Args...)
	env := []string{
		"CLAUDE_CONFIG_DIR=" + c.Root,
		"ANTHROPIC_BASE_URL=" + c.Bridge.URL,
		"ANTHROPIC_API_KEY=" + c.Bridge.Token,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1",
		"IS_SANDBOX=1",
	}
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: env, Stdin: []byte(c.Prompt)}, Meta: meta}, nil
}

// outputTextOf: stream-json assistant messages' text blocks.
func outputTextOf(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "assistant" {
		return ""
	}
	return launch.TextBlocks(gjson.GetBytes(line, "message.content"))
}

// recordedModel is the model the session's last response came from, for
// --model: a release whose default model differs would otherwise treat the
// resume as a model switch, and Claude Code drops the thinking blocks of
// earlier responses when the model changes (2.1.197 resuming a 2.1.332
// session recorded with another model does). "" when --agent-arg already
// chooses the model or no response names one.
func recordedModel(staged []byte, agentArgs []string) string {
	for _, a := range agentArgs {
		if name, _, _ := strings.Cut(a, "="); name == "--model" {
			return ""
		}
	}
	model := ""
	for _, line := range bytes.Split(staged, []byte("\n")) {
		if gjson.GetBytes(line, "type").Str != "assistant" {
			continue
		}
		if m := gjson.GetBytes(line, "message.model").Str; m != "" && m != "<synthetic>" {
			model = m
		}
	}
	return model
}
