package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/opencode/store"
)

// launcher continues an OpenCode session with `opencode run --session <id>
// <nonce>` (1.18). The rebuilt session is an export document; `opencode
// import` loads it, ids and all, into OpenCode's database in isolated XDG
// dirs, and a provider with the recorded provider and model ids points at
// the bridge over Chat Completions (the ids stay as recorded, so OpenCode
// picks the same system prompt and the requests the same model).
//
// OpenCode ignores its agent step limit on resumed sessions (pvisor.md §6),
// so the step budget is the bridge's: the request over the budget is held,
// and the engine stops OpenCode with SIGINT (it then writes its session and
// exits) and kills it after a grace period.
type launcher struct{}

const (
	tokenEnv = "PVISOR_BRIDGE_TOKEN"
	// stopGrace is how long a stopped OpenCode may take to flush its
	// session after SIGINT.
	stopGrace = 20 * time.Second
	// toolTimeout bounds import and export, which only touch the local
	// database.
	toolTimeout = 2 * time.Minute
)

func (launcher) Binary() string { return "opencode" }

func (launcher) NativeCLI() string { return "opencode" }

// VersionShape is how `--version` prints (1.18.33).
func (launcher) VersionShape() *regexp.Regexp { return launch.BareVersion() }

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

// Replies plays the recorded steps after the boundary with their own call
// ids, tool names and arguments (paths relocated).
func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	return launch.ChatReplies(c)
}

// noThinkingKwargs is the chat_template_kwargs --disable-thinking sends.
var noThinkingKwargs = json.RawMessage(`{"enable_thinking":false}`)

// DisableThinking is pVisor's --disable-thinking for OpenCode:
// chat_template_kwargs. pVisor also omits --thinking, which the launcher
// never passes.
func (launcher) DisableThinking(bridge.Protocol, []string) (launch.ThinkingOff, error) {
	return launch.ThinkingOff{Effect: "chat_template_kwargs.enable_thinking=false",
		Fields: map[string]json.RawMessage{"chat_template_kwargs": noThinkingKwargs}}, nil
}

// staged is an export ready for `opencode import`.
type staged struct {
	c          *launch.Continuation
	conv       *envelope.Chat
	sid        string
	export     string // the staged export document
	provider   string
	model      string
	stagedMsgs int
	doc        []byte
	// staging says how the session reached OpenCode's database: written
	// directly, or imported by the CLI and why.
	staging map[string]any
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	doc, _, err := c.Paths.JSON(c.Rebuilt)
	if err != nil {
		return nil, fmt.Errorf("relocating the export: %w", err)
	}
	proj, err := Project(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("the staged export: %w", err)
	}
	s := &staged{c: c, sid: proj.SessionID, export: filepath.Join(c.Home, "pvisor-staged-session.json"), doc: doc,
		stagedMsgs: len(gjson.GetBytes(doc, "messages").Array())}
	s.provider, s.model = sessionModel(doc)
	if s.provider == "" || s.model == "" {
		return nil, fmt.Errorf("the export names no provider and model (messages[].info.providerID/modelID or info.model)")
	}
	if err := os.WriteFile(s.export, doc, 0o600); err != nil {
		return nil, err
	}
	if s.conv, err = NewEnvelope(proj.Items, c.Envelope); err != nil {
		return nil, err
	}
	return s, nil
}

// sessionModel is the provider and model the session last used: the last
// assistant message's, else the session's.
func sessionModel(doc []byte) (provider, model string) {
	for _, m := range gjson.GetBytes(doc, "messages").Array() {
		info := m.Get("info")
		switch {
		case info.Get("providerID").Str != "" && info.Get("modelID").Str != "":
			provider, model = info.Get("providerID").Str, info.Get("modelID").Str
		case provider == "" && info.Get("model.providerID").Str != "":
			provider, model = info.Get("model.providerID").Str, info.Get("model.modelID").Str
		}
	}
	if provider == "" {
		provider, model = gjson.GetBytes(doc, "info.model.providerID").Str, gjson.GetBytes(doc, "info.model.id").Str
	}
	return provider, model
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

func (s *staged) StopSignal() (syscall.Signal, time.Duration) {
	return syscall.SIGINT, stopGrace
}

// env is the CLI's environment in the isolated home.
func (s *staged) env(token string) []string { return cliEnv(s.c.Home, token) }

// cliEnv is the CLI's environment with home as HOME: every config, data,
// cache and state dir in it (at the XDG defaults, so the data dir is where
// Bundled looks), and OpenCode's network extras off.
func cliEnv(h, token string) []string {
	env := []string{"HOME=" + h,
		"XDG_CONFIG_HOME=" + filepath.Join(h, ".config"), "XDG_DATA_HOME=" + filepath.Join(h, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(h, ".cache"), "XDG_STATE_HOME=" + filepath.Join(h, ".local", "state"),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "NO_COLOR=1", "TERM=dumb"}
	if token != "" {
		env = append(env, tokenEnv+"="+token)
	}
	return env
}

// bridgeConfig is the opencode.json that sends provider/model to the
// bridge at url.
func bridgeConfig(provider, model, url string) map[string]any {
	return map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       provider + "/" + model,
		"small_model": provider + "/" + model,
		"autoupdate":  false,
		"share":       "disabled",
		"permission":  map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"},
		"provider": map[string]any{provider: map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "pvisor bridge",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": "{env:" + tokenEnv + "}"},
			"models":  map[string]any{model: map[string]any{"name": model, "tool_call": true}},
		}},
	}
}

// Command writes opencode.json for the bridge, imports the staged export and
// resumes the session with the nonce as its prompt (run cannot start
// without one).
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	cfg := bridgeConfig(s.provider, s.model, b.URL)
	if n := s.c.Envelope.MaxLiveTurns; n > 0 {
		// A native limit one step past the budget, as a backstop should the
		// bridge's budget not hold. Not the budget itself: on its last
		// allowed step OpenCode 1.18 appends an assistant "maximum steps
		// reached" message and offers no tools, so the model would get one
		// request fewer than the budget allows, and one that is not a step.
		cfg["agent"] = map[string]any{"build": map[string]any{"steps": n + 1}}
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return launch.Command{}, err
	}
	dir := filepath.Join(s.c.Home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return launch.Command{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), data, 0o600); err != nil {
		return launch.Command{}, err
	}
	if err := s.stage(); err != nil {
		return launch.Command{}, err
	}
	args := []string{"run", "--format", "json", "--session", s.sid, "--model", s.provider + "/" + s.model}
	args = append(args, s.c.AgentArgs...)
	args = append(args, s.c.Envelope.Nonce)
	return launch.Command{Args: args, Env: s.env(b.Token)}, nil
}

// stage puts the session into the isolated home's database: written
// directly from the template, or by `opencode import` when that cannot
// stand in for the CLI (the reason is in the result's metadata).
func (s *staged) stage() error {
	env := append(append([]string(nil), s.c.Env...), s.env("")...)
	err := stageDB(s.c.StateRoot, s.c.Entrypoint, env, s.c.Home, s.c.Workspace, s.doc)
	if err == nil {
		s.staging = map[string]any{"method": "direct"}
		return nil
	}
	s.staging = map[string]any{"method": "import", "reason": err.Error()}
	out, errOut, err := s.tool("import", s.export)
	if err != nil {
		return err
	}
	if all := append(out, errOut...); !bytes.Contains(all, []byte(s.sid)) {
		return fmt.Errorf("opencode import did not report session %s: %s", s.sid, clipOut(all))
	}
	return nil
}

// tool runs an OpenCode subcommand that only touches the local database
// (import, export) and returns its output.
func (s *staged) tool(args ...string) (stdout, stderr []byte, err error) {
	if s.c.Entrypoint == "" {
		return nil, nil, fmt.Errorf("no opencode entrypoint to run %s with", args[0])
	}
	return runTool(s.c.Entrypoint, append(append([]string(nil), s.c.Env...), s.env("")...), s.c.Workspace, args...)
}

// runTool runs `opencode import|export …`, bounded in time.
func runTool(entry string, env []string, dir string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, entry, args...)
	cmd.Dir = dir
	cmd.Env = env
	// Bounded as pvisor's own read of the rows: an export document over the
	// capture limit is refused, and stderr is kept for the message only.
	out := &launch.CappedBuffer{Max: store.MaxExportBytes + 1}
	errOut := &launch.CappedBuffer{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("opencode %s: %v: %s", args[0], err, clipOut(errOut.Bytes()))
	}
	if out.Len() > store.MaxExportBytes {
		return nil, nil, fmt.Errorf("opencode %s printed more than %d bytes, the limit of a capture", args[0], store.MaxExportBytes)
	}
	return out.Bytes(), errOut.Bytes(), nil
}

// clipOut is the end of a CLI's output, as plain text, for a message.
func clipOut(b []byte) string {
	s := strings.TrimSpace(launch.PlainText(string(b)))
	if len(s) > 400 {
		s = s[len(s)-400:]
	}
	return s
}
