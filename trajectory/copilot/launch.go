package copilot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
)

// launcher continues a Copilot CLI session with `copilot -p <nonce>
// --resume=<id>` (1.0.102). The rebuilt events.jsonl goes into a session
// directory of an isolated COPILOT_HOME with the cwd rewritten to the
// workspace (session.start's context and workspace.yaml); Copilot's
// session-store.db is a derived index it rebuilds, so nothing else is
// needed. COPILOT_OFFLINE with a provider base URL points it at the bridge
// over Chat Completions with no login, update check or telemetry.
type launcher struct{}

func (launcher) Binary() string { return "copilot" }

// VersionShape is how `copilot --version` prints: "GitHub Copilot CLI
// 1.0.102." and a line about `copilot update`.
func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^GitHub Copilot CLI \d+\.\d+\.\d+`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	return launch.ChatReplies(c)
}

type staged struct {
	c     *launch.Continuation
	conv  *Envelope
	sid   string
	model string
	dir   string // the session directory
	lines int    // lines staged; Copilot appends after them
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	cwd := c.Workspace
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // Copilot records process.cwd(), which is resolved
	}
	s := &staged{c: c}
	var out bytes.Buffer
	var created string
	for n, line := range bytes.Split(c.Rebuilt, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		line, _, err := c.Paths.JSON(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if gjson.GetBytes(line, "type").Str == "session.start" {
			s.sid = gjson.GetBytes(line, "data.sessionId").Str
			s.model = gjson.GetBytes(line, "data.selectedModel").Str
			created = gjson.GetBytes(line, "data.startTime").Str
			line = launch.SetString(line, "data.context.cwd", cwd)
			if gjson.GetBytes(line, "data.context.gitRoot").Exists() {
				line = launch.SetString(line, "data.context.gitRoot", cwd)
			}
		}
		s.lines++
		out.Write(line)
		out.WriteByte('\n')
	}
	if !uuidRe().MatchString(s.sid) {
		return nil, fmt.Errorf("the session's id %q is not the UUID Copilot names session directories by", s.sid)
	}
	proj, err := Project(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("the staged session: %w", err)
	}
	if s.conv, err = NewEnvelope(proj.Items, c.Envelope); err != nil {
		return nil, err
	}
	s.dir = filepath.Join(c.Home, ".copilot", "session-state", s.sid)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "events.jsonl"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "workspace.yaml"), WorkspaceYAML(s.sid, cwd, created), 0o600); err != nil {
		return nil, err
	}
	// A copy of what the CLI resumed from: events.jsonl itself grows.
	if err := os.WriteFile(filepath.Join(c.Home, "pvisor-staged-session.jsonl"), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

var uuidRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// WorkspaceYAML is the workspace.yaml Copilot keeps beside events.jsonl,
// with the fields it reads back on resume.
func WorkspaceYAML(id, cwd, created string) []byte {
	if created == "" {
		created = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	}
	q := func(s string) string { return envelope.JSONString(s) } // a JSON string is a YAML scalar
	return fmt.Appendf(nil, "id: %s\ncwd: %s\ngit_root: %s\nsummary_count: 0\nfork_count: 0\ncreated_at: %s\nupdated_at: %s\n",
		id, q(cwd), q(cwd), created, created)
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Command resumes the session with the nonce as its prompt; the token is
// in the environment only.
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	model := s.model
	if model == "" {
		model = "gpt-4.1"
	}
	env := []string{
		"HOME=" + s.c.Home,
		"COPILOT_HOME=" + filepath.Join(s.c.Home, ".copilot"),
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL=" + b.URL + "/v1",
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_WIRE_API=completions",
		"COPILOT_PROVIDER_API_KEY=" + b.Token,
		"COPILOT_MODEL=" + model,
	}
	args := append([]string{}, s.c.AgentArgs...)
	args = append(args, "-p", s.c.Envelope.Nonce, "--allow-all-tools", "--output-format", "json",
		"--no-auto-update", "--disable-client-telemetry", "--resume="+s.sid)
	return launch.Command{Args: args, Env: env}, nil
}
