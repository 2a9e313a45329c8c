package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// resumeSpec is how one agent CLI resumes or forks a restored session
// against the bridge: its native flags, the configuration it needs to talk
// to the bridge, and where its output names the session it continued.
type resumeSpec struct {
	command   func(c resumeCall) (resumeCommand, error)
	sessionID func(stdout string) (string, error)
	// text is the assistant text one line of the CLI's output carries.
	text func(line []byte) string
	// For a CLI whose sessions live in a database (OpenCode): collect
	// exports session id after a run into the state directory as the
	// store's file, and export writes source session id of the database
	// in dataDir to the file out. nil for file-backed stores.
	collect func(c resumeCall, id string) error
	export  func(c resumeCall, dataDir, id, out string) error
	// stop and grace end the CLI (SIGTERM and 3 s when zero).
	stop  syscall.Signal
	grace time.Duration
}

// resumeCall is what a spec is given.
type resumeCall struct {
	mode, sid  string
	home, root string // the HOME and the agent's state directory in it
	main       string // the restored main session file
	prompt     string
	bridge     BridgeAddr
	args       []string // --agent-arg
	backup     string   // where a config file already in root goes first
	entry      string   // the CLI, for its import and export
	version    string   // the CLI's release, as probed
	env        []string // the base environment
	cwd        string   // the workspace
	stateRoot  string   // for OpenCode's template database
	// meta is the run's metadata, for what a later step (collect) reports.
	meta map[string]any
}

type resumeCommand struct {
	Command
	meta map[string]any
	// configs are the configuration files written for the bridge, to be
	// taken out again (and what they replaced put back) after the run.
	configs []string
}

// resumeSpecs are the agents pvisor resume and fork support: file-backed
// sessions with native resume and fork flags (reference/capture.md §5.4).
var resumeSpecs = map[string]resumeSpec{
	trajectory.ClaudeCode: {command: claudeResume, sessionID: streamID("type", "system", "session_id"), text: claudeText},
	trajectory.Codex:      {command: codexResume, sessionID: streamID("type", "thread.started", "thread_id"), text: codexText},
	trajectory.Pi:         {command: piResume, sessionID: streamID("type", "session", "id"), text: piText},
	trajectory.OpenCode: {command: opencodeResume, sessionID: streamID("type", "step_start", "sessionID"), text: opencodeText,
		collect: opencodeCollect, export: opencodeExport, stop: syscall.SIGINT, grace: opencodeStopGrace},
}

// claudeText: stream-json assistant messages' text blocks.
func claudeText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "assistant" {
		return ""
	}
	return textBlocks(gjson.GetBytes(line, "message.content"))
}

// codexText: --json agent_message items.
func codexText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "item.completed" || gjson.GetBytes(line, "item.type").Str != "agent_message" {
		return ""
	}
	return gjson.GetBytes(line, "item.text").Str
}

// piText: --mode json message_end events of assistant messages.
func piText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "message_end" || gjson.GetBytes(line, "message.role").Str != "assistant" {
		return ""
	}
	return textBlocks(gjson.GetBytes(line, "message.content"))
}

func textBlocks(content gjson.Result) string {
	var b strings.Builder
	content.ForEach(func(_, block gjson.Result) bool {
		if block.Get("type").Str == "text" {
			b.WriteString(block.Get("text").Str)
		}
		return true
	})
	return b.String()
}

func resumeAgents() []string {
	out := make([]string, 0, len(resumeSpecs))
	for a := range resumeSpecs {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// canonicalAgent maps the existing tooling's names.
func canonicalAgent(a string) string {
	if a == "pi-agent" {
		return trajectory.Pi
	}
	return a
}

// claudeResume: --resume in print mode with the prompt on stdin;
// --fork-session gives the continuation a new id.
func claudeResume(c resumeCall) (resumeCommand, error) {
	args := []string{"--print", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--resume", c.sid}
	if c.mode == ModeFork {
		args = append(args, "--fork-session")
	}
	meta := map[string]any{}
	data, err := os.ReadFile(c.main)
	if err != nil {
		return resumeCommand{}, err
	}
	if m := recordedModel(data, c.args); m != "" {
		args = append(args, "--model", m)
		meta["model_flag"] = map[string]any{"model": m, "source": "the model of the session's last response"}
	}
	args = append(args, c.args...)
	env := []string{
		"CLAUDE_CONFIG_DIR=" + c.root,
		"ANTHROPIC_BASE_URL=" + c.bridge.URL,
		"ANTHROPIC_API_KEY=" + c.bridge.Token,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1",
		"IS_SANDBOX=1",
	}
	return resumeCommand{Command{Args: args, Env: env, Stdin: []byte(c.prompt)}, meta, nil}, nil
}

// builtinCodexProviders cannot be redefined in config.toml.
var builtinCodexProviders = []string{"openai", "oss", "ollama", "lmstudio"}

// codexResume: `codex exec resume|fork <id> -` with the prompt on stdin and a
// config.toml whose provider is the bridge. The provider keeps the name the
// session recorded, so Codex sees no provider switch.
func codexResume(c resumeCall) (resumeCommand, error) {
	provider, model := codexProvider, ""
	err := scanLines(c.main, func(line []byte) {
		switch gjson.GetBytes(line, "type").Str {
		case "session_meta":
			if p := gjson.GetBytes(line, "payload.model_provider").Str; p != "" && !slices.Contains(builtinCodexProviders, p) && runIDPattern.MatchString(p) {
				provider = p
			}
		case "turn_context":
			if m := gjson.GetBytes(line, "payload.model").Str; m != "" {
				model = m
			}
		}
	})
	if err != nil {
		return resumeCommand{}, err
	}
	if err := writeConfig(filepath.Join(c.root, "config.toml"), codexConfig(provider, model, c.bridge.URL), c.backup); err != nil {
		return resumeCommand{}, err
	}
	sub := "resume"
	if c.mode == ModeFork {
		sub = "fork"
	}
	args := append([]string{"exec", sub, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}, c.args...)
	args = append(args, c.sid, "-")
	env := []string{"CODEX_HOME=" + c.root, codexTokenEnv + "=" + c.bridge.Token}
	return resumeCommand{Command{Args: args, Env: env, Stdin: []byte(c.prompt)},
		map[string]any{"codex_provider": provider, "codex_model": model}, []string{filepath.Join(c.root, "config.toml")}}, nil
}

// piResume: `pi --mode json --session <id>` (or --fork <id>) with a
// models.json that sends the session's provider to the bridge. Pi takes the
// prompt as an argument.
func piResume(c resumeCall) (resumeCommand, error) {
	var provider, model string
	err := scanLines(c.main, func(line []byte) {
		rec := gjson.ParseBytes(line)
		switch rec.Get("type").Str {
		case "model_change":
			provider, model = rec.Get("provider").Str, rec.Get("modelId").Str
		case "message":
			if p := rec.Get("message.provider").Str; p != "" && rec.Get("message.model").Str != "" {
				provider, model = p, rec.Get("message.model").Str
			}
		}
	})
	if err != nil {
		return resumeCommand{}, err
	}
	if provider == "" || model == "" {
		return resumeCommand{}, errors.New("the session names no provider and model (model_change entries or assistant messages)")
	}
	data, err := piModelsJSON(c.bridge.URL, provider, model, c.version)
	if err != nil {
		return resumeCommand{}, err
	}
	if err := writeConfig(filepath.Join(c.root, "models.json"), data, c.backup); err != nil {
		return resumeCommand{}, err
	}
	flag := "--session"
	if c.mode == ModeFork {
		flag = "--fork"
	}
	args := append([]string{"--mode", "json", "--provider", provider, "--model", model}, c.args...)
	args = append(args, flag, c.sid, c.prompt)
	env := []string{"PI_CODING_AGENT_DIR=" + c.root, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0",
		"XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(c.home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(c.home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(c.home, ".local", "state"),
		"NO_COLOR=1", "TERM=dumb", piTokenEnv + "=" + c.bridge.Token}
	return resumeCommand{Command{Args: args, Env: env}, map[string]any{"pi_provider": provider, "pi_model": model},
		[]string{filepath.Join(c.root, "models.json")}}, nil
}

// writeConfig writes a CLI's configuration file, moving one that is
// already there to backup first (a restore into a user's home).
func writeConfig(path string, data []byte, backup string) error {
	if _, err := os.Lstat(path); err == nil {
		if err := os.MkdirAll(backup, 0o700); err != nil {
			return err
		}
		if err := os.Rename(path, filepath.Join(backup, filepath.Base(path))); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// restoreConfigs removes the configuration files written for a run and
// puts back what writeConfig moved to backup: a restore into a user's home
// leaves their configuration as it was.
func restoreConfigs(paths []string, backup string) error {
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		kept := filepath.Join(backup, filepath.Base(p))
		if _, err := os.Lstat(kept); err == nil {
			errs = append(errs, os.Rename(kept, p))
		}
	}
	_ = os.Remove(backup) // only when empty: nothing left to recover
	return errors.Join(errs...)
}

// maxLine bounds one line of a session file or a CLI's output read here.
const maxLine = 64 << 20

// scanLines calls f with each line of path.
func scanLines(path string, f func(line []byte)) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			f(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// streamID finds the session id in a CLI's JSON event stream: the value at
// idPath of the first event whose key equals value.
func streamID(key, value, idPath string) func(string) (string, error) {
	return func(stdout string) (string, error) {
		id := ""
		err := scanLines(stdout, func(line []byte) {
			if id == "" && gjson.GetBytes(line, key).Str == value {
				id = gjson.GetBytes(line, idPath).Str
			}
		})
		if err != nil {
			return "", err
		}
		if id == "" {
			return "", fmt.Errorf("its output has no %s=%q event with a %s", key, value, idPath)
		}
		return id, nil
	}
}
