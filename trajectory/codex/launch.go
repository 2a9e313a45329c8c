package codex

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	// The recorded timezone decides the staged date; sandboxes often lack
	// /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/relocate"
)

// launcher continues a Codex rollout with `codex exec resume <id>
// <nonce>`. Codex 0.171.0 re-sends the stored history, then the nonce as a
// user message; when the resumed world differs from the recorded one
// (working directory, date, skills listing) it first inserts context updates.
//
// The rollout is staged so that the resumed world equals the recorded one and
// Codex inserts no context item before the nonce: the recorded working
// directory and CODEX_HOME become the workspace and the isolated home, the
// recorded date becomes today's (in the recorded timezone, which the CLI
// gets as TZ), and the model provider becomes the bridge (Codex refuses a
// thread whose provider is not configured, and a built-in one cannot be
// re-pointed).
type launcher struct{}

// bridgeProvider is the provider id the staged rollout and config.toml use.
const bridgeProvider = "pvisor_bridge"

// tokenEnv carries the bridge token; config.toml names it as env_key.
const tokenEnv = "PVISOR_BRIDGE_TOKEN"

func (launcher) Binary() string { return "codex" }

func (launcher) NativeCLI() string { return "codex" }

// VersionShape is how `--version` prints (codex-cli 0.171.0).
func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^codex-cli \d+\.\d+\.\d+\S*$`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Responses }

// Replies plays each recorded response after the boundary with its own call
// ids and kinds: function calls with their JSON arguments, freeform calls
// (apply_patch) with their input.
func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	t := c.Trajectory
	i := t.ActionIndex(c.AfterStep)
	if i < 0 {
		return nil, fmt.Errorf("step %d not found", c.AfterStep)
	}
	src, err := os.Open(c.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var out []fakemodel.Reply
	for n, a := range t.Actions[i+1:] {
		rep := fakemodel.Reply{Thinking: c.Paths.String(a.Reasoning), Text: c.Paths.String(a.Text)}
		for _, call := range a.Calls {
			line := make([]byte, call.Locator.EndByte-call.Locator.StartByte)
			if _, err := src.ReadAt(line, call.Locator.StartByte); err != nil && err != io.EOF {
				return nil, fmt.Errorf("reading call %s at %s: %w", call.ID, call.Locator, err)
			}
			tc, err := recordedCall(line, c.Paths)
			if err != nil {
				return nil, fmt.Errorf("response %d after the boundary (%s): %w", n+1, call.Locator, err)
			}
			rep.ToolCalls = append(rep.ToolCalls, tc)
		}
		if rep.Thinking == "" && rep.Text == "" && len(rep.ToolCalls) == 0 {
			return nil, fmt.Errorf("response %d after the boundary (%s) holds only server-side items, which cannot be played back", n+1, a.Locator)
		}
		out = append(out, rep)
	}
	return out, nil
}

// recordedCall is the recorded call on line (a rollout record) as the
// recorded upstream plays it.
func recordedCall(line []byte, paths relocate.Paths) (fakemodel.ToolCall, error) {
	p := gjson.GetBytes(line, "payload")
	id, name := p.Get("call_id").String(), p.Get("name").String()
	switch typ := p.Get("type").String(); typ {
	case "function_call":
		args := []byte(p.Get("arguments").String())
		if !gjson.ValidBytes(args) || !gjson.ParseBytes(args).IsObject() {
			return fakemodel.ToolCall{}, fmt.Errorf("call %s (%s) has arguments that are not a JSON object", id, name)
		}
		args, _, err := paths.JSON(args)
		if err != nil {
			return fakemodel.ToolCall{}, err
		}
		return fakemodel.ToolCall{ID: id, Name: name, Arguments: args}, nil
	case "custom_tool_call":
		return fakemodel.ToolCall{ID: id, Type: "custom", Name: name, Input: paths.String(p.Get("input").String())}, nil
	default:
		return fakemodel.ToolCall{}, fmt.Errorf("call %s is a %s, which the recorded upstream cannot play", id, typ)
	}
}

// staged is a rollout staged in an isolated CODEX_HOME.
type staged struct {
	c     *launch.Continuation
	conv  *Envelope
	sid   string
	path  string // the staged rollout
	lines int    // lines of the staged rollout (the prefix)
	model string
	tz    string
	meta  map[string]any
}

// skillRootRe finds the system skills root in the stored skills listing;
// its parent is the CODEX_HOME the session was recorded with.
var skillRootRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`r\\d+` = `([^`\\n]+)/skills/\\.system`") })

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	s := &staged{c: c, meta: map[string]any{}}
	rollout, err := s.stage(c.Rebuilt)
	if err != nil {
		return nil, err
	}
	proj, err := Project(bytes.NewReader(rollout))
	if err != nil {
		return nil, fmt.Errorf("the staged rollout: %w", err)
	}
	if s.conv, err = NewEnvelope(proj, c.Envelope); err != nil {
		return nil, err
	}
	return s, nil
}

// stage rewrites the rebuilt rollout for this sandbox and writes it where
// Codex finds it by id.
func (s *staged) stage(rebuilt []byte) ([]byte, error) {
	oldHome := ""
	if m := skillRootRe().FindSubmatch(rebuilt); m != nil {
		oldHome = string(m[1])
	}
	homes := relocate.Paths{From: oldHome, To: s.c.Home}
	moves := map[string]string{}
	if s.c.Paths.Active() {
		moves["cwd"] = s.c.Paths.From + " -> " + s.c.Paths.To
	}
	if homes.Active() {
		moves["codex_home"] = homes.From + " -> " + homes.To
	}
	s.meta["relocated"] = moves
	// The longer path first: a home inside the recorded cwd (/root/.codex
	// under /root) must move as the home, not as a file of the cwd.
	moveOrder := []relocate.Paths{s.c.Paths, homes}
	if len(homes.From) > len(s.c.Paths.From) {
		moveOrder[0], moveOrder[1] = homes, s.c.Paths
	}

	var out bytes.Buffer
	var name string
	for n, line := range bytes.SplitAfter(rebuilt, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var err error
		for _, p := range moveOrder {
			if line, _, err = p.JSON(line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		}
		switch gjson.GetBytes(line, "type").String() {
		case "session_meta":
			if n == 0 {
				s.sid = gjson.GetBytes(line, "payload.id").String()
				name = s.fileName(gjson.GetBytes(line, "payload.timestamp").String())
				s.meta["recorded_provider"] = gjson.GetBytes(line, "payload.model_provider").String()
			}
			line = launch.SetString(line, "payload.model_provider", bridgeProvider)
		case "event_msg":
			line = launch.SetString(line, "payload.thread_settings.model_provider_id", bridgeProvider)
		case "turn_context":
			if m := gjson.GetBytes(line, "payload.model").String(); m != "" {
				s.model = m
			}
		case "world_state":
			line = s.worldState(line)
		}
		s.lines++
		out.Write(line)
	}
	if s.sid == "" || name == "" {
		return nil, fmt.Errorf("the rollout's session_meta has no id or timestamp")
	}
	day, err := time.Parse("2006-01-02", name[len("rollout-"):len("rollout-")+10])
	if err != nil {
		return nil, fmt.Errorf("rollout name %s: %w", name, err)
	}
	dir := filepath.Join(s.c.Home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s.path = filepath.Join(dir, name)
	if err := os.WriteFile(s.path, out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	// A copy of what the CLI resumed from: the session file itself grows.
	if err := os.WriteFile(filepath.Join(s.c.Home, "pvisor-staged-session.jsonl"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// fileName keeps the recorded file name when it names this session (Codex
// finds a rollout by the id at the end of its name), else builds one from
// session_meta's timestamp.
func (s *staged) fileName(ts string) string {
	base := filepath.Base(s.c.Source)
	if id, ok := RolloutID(base); ok && id == s.sid {
		return base
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ""
	}
	return "rollout-" + t.UTC().Format("2006-01-02T15-04-05") + "-" + s.sid + ".jsonl"
}

// worldState moves the recorded date to today in the recorded timezone, so
// Codex sees no change to announce, and remembers the timezone for TZ.
func (s *staged) worldState(line []byte) []byte {
	env := "payload.state.environments"
	if tz := gjson.GetBytes(line, env+".timezone").String(); tz != "" {
		s.tz = tz
	}
	rec := gjson.GetBytes(line, env+".current_date").String()
	if rec == "" {
		return line
	}
	loc, err := time.LoadLocation(s.tz)
	if err != nil {
		s.meta["world_state_date"] = map[string]any{"recorded": rec, "kept": true, "reason": "unknown timezone " + s.tz}
		return line
	}
	today := time.Now().In(loc).Format("2006-01-02")
	if today != rec {
		s.meta["world_state_date"] = map[string]any{"recorded": rec, "staged": today}
	}
	return launch.SetString(line, env+".current_date", today)
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Command writes config.toml for the bridge and resumes the thread with the
// nonce as its prompt (exec resume cannot start without one).
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	cfg := config(bridgeProvider, s.model, b.URL)
	if err := os.WriteFile(filepath.Join(s.c.Home, "config.toml"), cfg, 0o600); err != nil {
		return launch.Command{}, err
	}
	args := []string{"exec", "resume", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	args = append(args, s.c.AgentArgs...)
	args = append(args, s.sid, s.c.Envelope.Nonce)
	env := []string{"CODEX_HOME=" + s.c.Home, tokenEnv + "=" + b.Token}
	if s.tz != "" {
		env = append(env, "TZ="+s.tz)
	}
	return launch.Command{Args: args, Env: env}, nil
}

// config is the config.toml that sends Codex's model requests to the
// bridge at url through provider: responses wire API, no websockets, no
// update check, analytics or plugins.
func config(provider, model, url string) []byte {
	var cfg strings.Builder
	if model != "" {
		fmt.Fprintf(&cfg, "model = %q\n", model)
	}
	fmt.Fprintf(&cfg, `model_provider = %q
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
enable_request_compression = false

[model_providers.%s]
name = "pvisor bridge"
base_url = %q
wire_api = "responses"
env_key = %q
supports_websockets = false
`, provider, provider, url+"/v1", tokenEnv)
	return []byte(cfg.String())
}
