package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/tested"
)

// launcher continues a Pi session with `pi --mode json --session <id>
// <nonce>` (0.73). The rebuilt v3 session goes where Pi looks for the
// workspace's sessions (~/.pi/agent/sessions/--<cwd>--/ under the isolated
// HOME), with its header cwd set to the workspace, and models.json points a
// provider with the recorded provider and model ids at the bridge over Chat
// Completions. Pi has no step limit of its own, so the step budget is the
// bridge's.
type launcher struct{}

const tokenEnv = "PVISOR_BRIDGE_TOKEN"

// builtinTools are Pi's built-in tools in the order its --tools flag lists them;
// read, bash, edit and write are on by default.
var builtinTools = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}

func (launcher) Binary() string { return "pi" }

// VersionShape is how `--version` prints (0.73.1).
func (launcher) VersionShape() *regexp.Regexp { return launch.BareVersion() }

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	return launch.ChatReplies(c)
}

type staged struct {
	c          *launch.Continuation
	conv       *envelope.Chat
	sid        string
	path       string // the staged session file, which Pi appends to
	lastID     string // the boundary entry
	lines      int
	provider   string
	model      string
	tools      []string
	pathPrefix string // a directory with an fd wrapper, when one was needed
}

var sessionFileRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_(.+)\.jsonl$`)
})

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	cwd := c.Workspace
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // Pi keys sessions by process.cwd(), which is resolved
	}
	var out bytes.Buffer
	s := &staged{c: c}
	ts := ""
	for n, line := range bytes.SplitAfter(c.Rebuilt, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		line, _, err := c.Paths.JSON(bytes.TrimRight(line, "\n"))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		rec := gjson.ParseBytes(line)
		switch rec.Get("type").Str {
		case "session":
			s.sid, ts = rec.Get("id").Str, rec.Get("timestamp").Str
			line = launch.SetString(line, "cwd", cwd)
		case "model_change":
			s.provider, s.model = rec.Get("provider").Str, rec.Get("modelId").Str
		case "message":
			if p := rec.Get("message.provider").Str; p != "" && rec.Get("message.model").Str != "" {
				s.provider, s.model = p, rec.Get("message.model").Str
			}
		}
		s.lines++
		out.Write(line)
		out.WriteByte('\n')
	}
	if s.sid == "" {
		return nil, fmt.Errorf("the session has no header id")
	}
	if s.provider == "" || s.model == "" {
		return nil, fmt.Errorf("the session names no provider and model (model_change entries or assistant messages)")
	}
	proj, err := Project(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("the staged session: %w", err)
	}
	s.lastID = proj.LastID
	if s.conv, err = NewEnvelope(proj.Items, c.Envelope); err != nil {
		return nil, err
	}
	s.tools = usedTools(c)

	name := filepath.Base(c.Source)
	if m := sessionFileRe().FindStringSubmatch(name); m == nil || m[1] != s.sid {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t = time.Now()
		}
		name = strings.ReplaceAll(t.UTC().Format("2006-01-02T15:04:05.000Z"), ":", "-") + "_" + s.sid + ".jsonl"
		name = strings.Replace(name, ".", "-", 1)
	}
	dir := filepath.Join(c.Home, ".pi", "agent", "sessions", SessionDir(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s.path = filepath.Join(dir, name)
	if err := os.WriteFile(s.path, out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	// A copy of what the CLI resumed from: the session file itself grows.
	if err := os.WriteFile(filepath.Join(c.Home, "pvisor-staged-session.jsonl"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

// ModelsJSON is the models.json that points the session's provider and
// model at the bridge over Chat Completions, with the token named as the
// release reads it.
func ModelsJSON(bridgeURL, provider, model, version string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{"providers": map[string]any{provider: map[string]any{
		"baseUrl": bridgeURL + "/v1",
		"api":     "openai-completions",
		"apiKey":  apiKey(version),
		"models":  []any{map[string]any{"id": model, "name": model}},
	}}}, "", "  ")
}

// apiKey is how models.json names the bridge token for a Pi release, so
// that the token's value reaches the bridge, never the variable's name:
// before 0.77.0 a bare string that names an environment variable is read
// from it; since then a bare string is the key itself and "$NAME" reads
// the variable (0.79.4 dropped the last legacy reading of bare names).
func apiKey(version string) string {
	if v, err := tested.ParseSemver(version); err == nil && v.Compare(tested.MustSemver("0.77.0")) < 0 {
		return tokenEnv
	}
	return "$" + tokenEnv
}

// usedTools is Pi's default tools plus every built-in the trajectory
// called, so a session recorded with --tools grep,find,ls resumes with them.
func usedTools(c *launch.Continuation) []string {
	used := map[string]bool{"read": true, "bash": true, "edit": true, "write": true}
	for _, a := range c.Trajectory.Actions {
		for _, call := range a.Calls {
			used[call.Name] = true
		}
	}
	var out []string
	for _, t := range builtinTools {
		if used[t] {
			out = append(out, t)
		}
	}
	return out
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Command writes models.json for the bridge and resumes the session with the
// nonce as its prompt (print and json modes do nothing without one).
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	data, err := ModelsJSON(b.URL, s.provider, s.model, s.c.Version)
	if err != nil {
		return launch.Command{}, err
	}
	dir := filepath.Join(s.c.Home, ".pi", "agent")
	if err := os.WriteFile(filepath.Join(dir, "models.json"), data, 0o600); err != nil {
		return launch.Command{}, err
	}
	env := append([]string{"HOME=" + s.c.Home}, quietEnv(s.c.Home)...)
	env = append(env, tokenEnv+"="+b.Token)
	if slices.Contains(s.tools, "find") {
		if bin, err := s.provideFd(); err != nil {
			return launch.Command{}, err
		} else if bin != "" {
			env = append(env, "PATH="+bin+string(os.PathListSeparator)+launch.EnvValue(s.c.Env, "PATH"))
		}
	}
	args := []string{"--mode", "json", "--provider", s.provider, "--model", s.model, "--tools", strings.Join(s.tools, ",")}
	args = append(args, s.c.AgentArgs...)
	args = append(args, "--session", s.sid, s.c.Envelope.Nonce)
	return launch.Command{Args: args, Env: env}, nil
}

// provideFd puts an fd that Pi's find tool accepts on PATH when there is none:
// Pi 0.73 runs fd with --no-require-git (fd ≥ 8.7), Debian ships it as
// fdfind, older than that. The wrapper drops the flag, which changes nothing
// inside a git repository. Without fd Pi tries to download it, and fails
// offline. It returns the directory to put first on PATH, "" when fd is
// there already.
func (s *staged) provideFd() (string, error) {
	path := launch.EnvValue(s.c.Env, "PATH")
	if launch.LookIn(path, "fd") != "" {
		return "", nil
	}
	fdfind := launch.LookIn(path, "fdfind")
	if fdfind == "" {
		return "", nil // Pi's find reports its own error; the rest still works
	}
	help, _ := exec.Command(fdfind, "--help").Output()
	script := "#!/bin/sh\nexec " + fdfind + " \"$@\"\n"
	if !bytes.Contains(help, []byte("--no-require-git")) {
		script = "#!/bin/sh\n# fd < 8.7 has no --no-require-git; drop it.\n" +
			"for a; do shift; [ \"$a\" = --no-require-git ] || set -- \"$@\" \"$a\"; done\n" +
			"exec " + fdfind + " \"$@\"\n"
	}
	bin := filepath.Join(s.c.Home, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(bin, "fd"), []byte(script), 0o700); err != nil {
		return "", err
	}
	return bin, nil
}
