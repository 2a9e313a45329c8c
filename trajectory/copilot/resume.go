package copilot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay/launch"
)

// resume: `copilot -p P --resume=<id>` against the bridge. Copilot has no
// fork flag (only the interactive /fork), so a fork is a copy: the restored
// directory copied under a new UUID with workspace.yaml's id and
// session.start's sessionId changed — measured to resume as its own
// session — and the parent left as it is.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "result", "sessionId"),
	Text:      outputText,
}

func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	dir := filepath.Dir(c.Main)
	sid := c.SID
	meta := map[string]any{}
	if c.Fork {
		child := uuid.NewString()
		to := filepath.Join(filepath.Dir(dir), child)
		if err := copyDir(dir, to); err != nil {
			return launch.ResumeCommand{}, fmt.Errorf("fork by copy: %w", err)
		}
		if err := setSessionID(filepath.Join(to, "events.jsonl"), child); err != nil {
			return launch.ResumeCommand{}, fmt.Errorf("fork by copy: %w", err)
		}
		dir, sid = to, child
		meta["fork_method"] = "copy (copilot has no fork flag): session-state/" + c.SID + " copied to session-state/" + child +
			" with workspace.yaml id and session.start sessionId changed"
	}
	model := ""
	if err := launch.ScanLines(filepath.Join(dir, "events.jsonl"), func(line []byte) {
		if model == "" && gjson.GetBytes(line, "type").Str == "session.start" {
			model = gjson.GetBytes(line, "data.selectedModel").Str
		}
	}); err != nil {
		return launch.ResumeCommand{}, err
	}
	if model == "" {
		return launch.ResumeCommand{}, errors.New("session.start names no selectedModel")
	}
	rewritten, err := rewriteWorkspace(filepath.Join(dir, "workspace.yaml"), sid, c.Cwd)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	meta["copilot_model"] = model
	meta["rewritten"] = append([]string{"events.jsonl session.start/session.resume context.cwd, gitRoot"}, rewritten...)
	env := []string{
		"COPILOT_HOME=" + c.Root,
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL=" + c.Bridge.URL + "/v1",
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_WIRE_API=completions",
		"COPILOT_PROVIDER_API_KEY=" + c.Bridge.Token,
		"COPILOT_MODEL=" + model,
	}
	args := append([]string{}, c.Args...)
	args = append(args, "-p", c.Prompt, "--allow-all-tools", "--output-format", "json",
		"--no-auto-update", "--disable-client-telemetry", "--resume="+sid)
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: env}, Meta: meta}, nil
}

// outputText: the assistant.message events of --output-format json.
func outputText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "assistant.message" {
		return ""
	}
	return gjson.GetBytes(line, "data.content").Str
}

// rewriteWorkspace sets id, cwd and git_root in a restored workspace.yaml
// (written afresh when the directory had none) and says what it changed.
func rewriteWorkspace(path, id, cwd string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{"workspace.yaml written"}, os.WriteFile(path, WorkspaceYAML(id, cwd, ""), 0o600)
	}
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	var changed []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		key, _, ok := strings.Cut(line, ":")
		var val string
		switch {
		case ok && key == "id":
			val = id
		case ok && (key == "cwd" || key == "git_root"):
			val = envelope.JSONString(cwd) // a JSON string is a YAML scalar
		default:
			out.WriteString(line)
			continue
		}
		nl := ""
		if strings.HasSuffix(line, "\n") {
			nl = "\n"
		}
		if next := key + ": " + val + nl; next != line {
			changed = append(changed, "workspace.yaml "+key)
			line = next
		}
		out.WriteString(line)
	}
	return changed, os.WriteFile(path, out.Bytes(), 0o600)
}

// copyDir copies the regular files of a session directory (lock files
// left out) into a new one; anything else in it is refused, as capture
// refuses it.
func copyDir(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("%s exists already", to)
	}
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case strings.HasSuffix(d.Name(), ".lock"):
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
}

// setSessionID gives the copy's session.start (its first line) the new id;
// nothing else in events.jsonl names the session.
func setSessionID(path, id string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if gjson.GetBytes(first, "type").Str != "session.start" {
		return errors.New("events.jsonl does not start with session.start")
	}
	out := append(launch.SetString(first, "data.sessionId", id), '\n')
	return os.WriteFile(path, append(out, rest...), 0o600)
}
