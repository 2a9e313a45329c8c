package claude

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
)

// launcher continues a Claude Code session with `claude --resume <id>
// --print` and the nonce on stdin. Print mode cannot resume without a prompt
// (2.1.197 exits with "No deferred tool marker found"); with one, Claude
// Code closes the interrupted turn itself: the resume prompt (set to a
// per-run marker through CLAUDE_CODE_RESUME_PROMPT) after the boundary
// results, a synthetic "No response requested.", then the nonce. The bridge
// strips all three from every request (Envelope), and Collect removes
// the records they left in the session file.
type launcher struct{}

// configDir is the CLAUDE_CONFIG_DIR inside the launcher's home.
const configDir = "claude-config"

func (launcher) Binary() string { return "claude" }

// VersionShape is how `--version` prints (2.1.332 (Claude Code)).
func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\d+\.\d+\.\d+\S* \(Claude Code\)$`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Anthropic }

// Replies plays each recorded response after the boundary with its own
// tool_use ids and inputs, relocated to the workspace.
func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	t := c.Trajectory
	i := t.ActionIndex(c.AfterStep)
	if i < 0 {
		return nil, fmt.Errorf("step %d not found", c.AfterStep)
	}
	var out []fakemodel.Reply
	for n, a := range t.Actions[i+1:] {
		rep := fakemodel.Reply{Thinking: c.Paths.String(a.Reasoning), Text: c.Paths.String(a.Text)}
		for _, call := range a.Calls {
			args, _, err := c.Paths.JSON(call.Arguments)
			if err != nil {
				return nil, fmt.Errorf("response %d after the boundary (%s): tool_use %s: %w", n+1, a.Locator, call.ID, err)
			}
			rep.ToolCalls = append(rep.ToolCalls, fakemodel.ToolCall{ID: call.ID, Name: call.Name, Arguments: args})
		}
		if rep.Thinking == "" && rep.Text == "" && len(rep.ToolCalls) == 0 {
			return nil, fmt.Errorf("response %d after the boundary (%s) holds only blocks that cannot be played back (redacted thinking, server tools)", n+1, a.Locator)
		}
		out = append(out, rep)
	}
	return out, nil
}

// staged is a session staged in an isolated CLAUDE_CONFIG_DIR.
type staged struct {
	c      *launch.Continuation
	conv   *Envelope
	sid    string
	config string // CLAUDE_CONFIG_DIR
	path   string // the staged session
	lines  int    // lines of the staged session (the prefix)
	tools  []string
	model  string // --model: the recorded one
	meta   map[string]any
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	s := &staged{c: c, config: filepath.Join(c.Home, configDir), meta: map[string]any{}}
	session, err := s.stage(c.Rebuilt)
	if err != nil {
		return nil, err
	}
	proj, err := Project(bytes.NewReader(session))
	if err != nil {
		return nil, fmt.Errorf("the staged session: %w", err)
	}
	if proj.SessionID != "" && proj.SessionID != s.sid {
		return nil, fmt.Errorf("the staged session's leaf belongs to session %s, not %s", proj.SessionID, s.sid)
	}
	if s.conv, err = NewEnvelope(proj, c.Envelope); err != nil {
		return nil, err
	}
	s.tools = recordedTools(c)
	s.model = recordedModel(session, c.AgentArgs)
	return s, nil
}

// stage rewrites every recorded path (cwd fields, tool inputs and results)
// to the workspace and writes the session where Claude Code looks for it
// when it runs in the workspace.
func (s *staged) stage(rebuilt []byte) ([]byte, error) {
	if s.c.Paths.Active() {
		s.meta["relocated"] = map[string]string{"cwd": s.c.Paths.From + " -> " + s.c.Paths.To}
	}
	var out bytes.Buffer
	host := hostOSVersion()
	for n, line := range bytes.SplitAfter(rebuilt, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		line, _, err := s.c.Paths.JSON(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if moved, from := RelocateEnvironment(line, host); from != "" {
			line = moved
			s.meta["relocated_os_version"] = from + " -> " + host
		}
		if sid := gjson.GetBytes(line, "sessionId").Str; sid != "" && gjson.GetBytes(line, "uuid").Exists() {
			s.sid = sid
		}
		s.lines++
		out.Write(line)
	}
	if s.sid == "" {
		return nil, fmt.Errorf("the rebuilt session has no entry with a sessionId")
	}
	s.path = StagePath(s.config, s.c.Workspace, s.sid)
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.path, out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	// A copy of what the CLI resumed from: the session file itself grows.
	if err := os.WriteFile(filepath.Join(s.c.Home, "pvisor-staged-session.jsonl"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	s.meta["session_path"] = s.path
	return out.Bytes(), nil
}

// searchTools are built-in tools Claude Code 2.1.x offers only when --tools
// (or --allowedTools) names them: by default its Bash tool embeds find and
// grep instead.
var searchTools = map[string]bool{"Glob": true, "Grep": true}

// recordedTools returns the --tools list a session needs: a session that
// called Glob or Grep was recorded with a tool list naming them, and a
// resume without one would offer neither. The session does not store the
// list, so it is the tools the whole recorded trajectory called (the
// request's tools are sorted by name, so the order does not matter). nil
// when the session needs none or --agent-arg already chooses the tools.
func recordedTools(c *launch.Continuation) []string {
	for _, a := range c.AgentArgs {
		name, _, _ := strings.Cut(a, "=")
		if name == "--tools" || name == "--allowedTools" || name == "--allowed-tools" {
			return nil
		}
	}
	var names []string
	needed := false
	for _, a := range c.Trajectory.Actions {
		for _, call := range a.Calls {
			if strings.HasPrefix(call.Name, "mcp__") || slices.Contains(names, call.Name) {
				continue
			}
			names = append(names, call.Name)
			needed = needed || searchTools[call.Name]
		}
	}
	if !needed {
		return nil
	}
	slices.Sort(names)
	return names
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Command resumes the session in print mode with the nonce on stdin. The
// bridge token travels in the environment only.
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	args := []string{"--resume", s.sid, "--print", "--output-format", "stream-json", "--verbose",
		"--dangerously-skip-permissions"}
	if len(s.tools) > 0 {
		args = append(args, "--tools", strings.Join(s.tools, ","))
		s.meta["tools_flag"] = map[string]any{"tools": s.tools, "source": "tools the recorded session called"}
	}
	if s.model != "" {
		args = append(args, "--model", s.model)
		s.meta["model_flag"] = map[string]any{"model": s.model, "source": "the model of the session's last response"}
	}
	args = append(args, s.c.AgentArgs...)
	if n := s.c.Envelope.MaxLiveTurns; n > 0 {
		// One more than the budget: the bridge holds the request over the
		// budget and the engine stops the agent (status max_steps); the
		// CLI's own limit is only a backstop, and hitting it would end the
		// run as a failure (exit 1, error_max_turns).
		args = append(args, "--max-turns", strconv.Itoa(n+1))
	}
	env := []string{
		"CLAUDE_CONFIG_DIR=" + s.config,
		"ANTHROPIC_BASE_URL=" + b.URL,
		"ANTHROPIC_API_KEY=" + b.Token,
		"CLAUDE_CODE_RESUME_PROMPT=" + ResumeMarker(s.c.Envelope.Nonce),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1",
		// --dangerously-skip-permissions as root (sandboxes usually are).
		"IS_SANDBOX=1",
	}
	return launch.Command{Args: args, Env: env, Stdin: []byte(s.c.Envelope.Nonce)}, nil
}
