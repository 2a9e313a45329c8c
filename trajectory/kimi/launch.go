package kimi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
)

// launcher continues a Kimi Code session with `kimi -S <id> -p <nonce>
// --output-format stream-json`. The rebuilt wire log goes into a session
// directory of its own under KIMI_CODE_HOME in the isolated home, named for
// the workspace (WorkspaceID), with the workspace id
// of runtime.set_binding and the cwd (system prompt included) rewritten, and
// a state.json; Kimi resumes a log cut at any step from its loop events.
// The model comes from the environment alone (KIMI_MODEL_*), the bridge
// token as the API key.
type launcher struct{}

func (launcher) Binary() string { return "kimi" }

// VersionShape is how `kimi --version` prints: a bare 2.1.0.
func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\d+\.\d+\.\d+\S*$`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	return launch.ChatReplies(c)
}

// StagedCopy is the name of the copy of the staged wire log in the home.
const StagedCopy = "pvisor-staged-session.jsonl"

type staged struct {
	c     *launch.Continuation
	conv  *envelope.Chat
	sid   string
	dir   string // the session directory
	wire  string // its agents/main/wire.jsonl, which Kimi appends to
	size  int    // bytes staged
	model string
}

// sessionIDRe is a session directory's name.
var sessionIDRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^session_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// WorkspaceID is Kimi's name for the sessions directory of cwd:
// wd_<slug>_<sha256(cwd)[:12]>, the slug being the last path element
// lower-cased, each run of bytes outside [a-z0-9._-] one '-', '-' trimmed
// from both ends, cut to 40 and trimmed again, "workspace" when that leaves
// "", "." or ".." (Kimi Code 2.1.0: measured, "My Repo.X_y" is
// my-repo.x_y). Trailing slashes are not part of the hashed path.
func WorkspaceID(cwd string) string {
	cwd = strings.TrimRight(cwd, "/")
	sum := sha256.Sum256([]byte(cwd))
	return "wd_" + workspaceSlug(cwd[strings.LastIndexByte(cwd, '/')+1:]) + "_" + hex.EncodeToString(sum[:])[:12]
}

func workspaceSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < 0x80 && nameByte(byte(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.Trim(b.String(), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" || slug == "." || slug == ".." {
		return "workspace"
	}
	return slug
}

// sessionID is the recorded session's id when the log sits in its session
// directory (…/session_<uuid>/agents/main/wire.jsonl), else one derived
// from the log's bytes.
func sessionID(source string, data []byte) string {
	if d := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(source)))); sessionIDRe().MatchString(d) {
		return d
	}
	h := sha256.Sum256(data)
	x := hex.EncodeToString(h[:16])
	return "session_" + x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	cwd := c.Workspace
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // Kimi names the directory for the resolved cwd
	}
	wd := WorkspaceID(cwd)
	var out bytes.Buffer
	for n, line := range bytes.Split(c.Rebuilt, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		line, _, err := c.Paths.JSON(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if gjson.GetBytes(line, "type").Str == "runtime.set_binding" {
			line = launch.SetString(line, "workspaceId", wd)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	proj, err := Project(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the staged session: %w", err)
	}
	s := &staged{c: c, sid: sessionID(c.Source, c.Rebuilt), size: out.Len(), model: proj.Model}
	if s.model == "" {
		s.model = "kimi-model"
	}
	if s.conv, err = NewEnvelope(proj.Items, c.Envelope); err != nil {
		return nil, err
	}
	s.dir = filepath.Join(c.Home, ".kimi-code", "sessions", wd, s.sid)
	main := filepath.Join(s.dir, "agents", "main")
	if err := os.MkdirAll(main, 0o700); err != nil {
		return nil, err
	}
	s.wire = filepath.Join(main, "wire.jsonl")
	if err := os.WriteFile(s.wire, out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	// A copy of what the CLI resumed from: the wire log itself grows.
	if err := os.WriteFile(filepath.Join(c.Home, StagedCopy), out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	state, _ := json.Marshal(map[string]any{"id": s.sid, "version": 2, "cwd": cwd, "createdAt": now, "updatedAt": now,
		"archived": false, "agents": map[string]any{"main": map[string]any{"homedir": main, "type": "main"}},
		"custom": map[string]any{}, "lastTurnReason": "completed", "isCustomTitle": false})
	if err := os.WriteFile(filepath.Join(s.dir, "state.json"), state, 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Command resumes the staged session with the nonce as its prompt.
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	env := []string{"HOME=" + s.c.Home, "KIMI_CODE_HOME=" + filepath.Join(s.c.Home, ".kimi-code"),
		"KIMI_MODEL_NAME=" + s.model, "KIMI_MODEL_PROVIDER_TYPE=openai", "KIMI_MODEL_BASE_URL=" + b.URL + "/v1",
		"KIMI_MODEL_API_KEY=" + b.Token, "KIMI_DISABLE_TELEMETRY=1", "KIMI_CODE_NO_AUTO_UPDATE=1"}
	args := append([]string(nil), s.c.AgentArgs...)
	args = append(args, "-S", s.sid, "-p", s.c.Envelope.Nonce, "--output-format", "stream-json")
	return launch.Command{Args: args, Env: env}, nil
}

// NewEnvelope is the envelope of `kimi -S <id> -p <nonce>` over Chat
// Completions: the system message, the projection, the nonce as a plain
// user string, then the <system-reminders> Kimi adds to the prompt: the
// date-change one when the session was last written on another day, and
// the auto-permission-mode one it adds to every prompt; the nonce and
// those reminders are removed, so the first request still ends at the
// boundary observation whatever day the session is continued on.
func NewEnvelope(prefix []json.RawMessage, opts envelope.Options) (*envelope.Chat, error) {
	return envelope.NewChat(AgentName, prefix, opts, envelope.ChatRules{
		Nonce:      func(m gjson.Result, nonce string) bool { return m.Get("content").Str == nonce },
		Prompt:     EnvelopePrompt,
		AfterNonce: isPromptReminder,
	})
}

// EnvelopePrompt is the user message that carries a boundary prompt: a
// plain string, as Kimi sends a prompt.
func EnvelopePrompt(p string) string {
	return `{"role":"user","content":` + envelope.JSONString(p) + `}`
}

// isPromptReminder: a reminder Kimi attaches to a new prompt, not one a
// turn of the conversation carries.
func isPromptReminder(m gjson.Result) bool {
	_, ok := promptReminder(m.Get("content").Str)
	return ok
}

// promptReminder names the reminder c is, if it is one Kimi attaches to
// a new prompt.
func promptReminder(c string) (string, bool) {
	if !strings.HasSuffix(c, "</system-reminder>") {
		return "", false
	}
	switch {
	case strings.HasPrefix(c, "<system-reminder>\nAuto permission mode is active."):
		return "auto permission mode reminder", true
	case strings.HasPrefix(c, "<system-reminder>\nThe date has changed. Today's date is now "):
		return "date change reminder", true
	}
	return "", false
}

// Collect reads the continued wire log and removes the records the
// envelope added: the nonce's turn.prompt, user message and
// agent.message.appended, and the prompt reminders right after it.
func (s *staged) Collect() (*launch.Collected, error) {
	data, err := os.ReadFile(s.wire)
	if err != nil {
		return nil, err
	}
	if len(data) < s.size {
		return nil, fmt.Errorf("%s is shorter than the staged log", s.wire)
	}
	nonce := s.c.Envelope.Nonce
	var out bytes.Buffer
	out.Write(data[:s.size])
	var removed []map[string]any
	dropReminder := false
	for i, line := range bytes.SplitAfter(data[s.size:], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec := gjson.ParseBytes(line)
		typ := rec.Get("type").Str
		switch {
		case typ == "turn.prompt" && bytes.Contains(line, []byte(nonce)):
			removed = append(removed, map[string]any{"record": "turn.prompt (resume nonce)", "line": i + 1})
			continue
		case typ == "context.append_message" && rec.Get("message.content.0.text").Str == nonce:
			removed = append(removed, map[string]any{"record": "user message (resume nonce)", "line": i + 1})
			dropReminder = true
			continue
		case typ == "agent.message.appended" && rec.Get("message.message.role").Str == "user" &&
			rec.Get("message.message.content.0.text").Str == nonce:
			removed = append(removed, map[string]any{"record": "agent.message.appended (resume nonce)", "line": i + 1})
			continue
		case dropReminder && typ == "context.append_message":
			if name, ok := promptReminder(rec.Get("message.content.0.text").Str); ok {
				removed = append(removed, map[string]any{"record": name, "line": i + 1})
				continue
			}
			dropReminder = false
		}
		out.Write(line)
	}
	if bytes.Contains(out.Bytes(), []byte(nonce)) {
		return nil, fmt.Errorf("%s: the resume nonce is still in the collected log, in records this pvisor does not know", s.wire)
	}
	return &launch.Collected{Session: out.Bytes(), Metadata: map[string]any{"removed_records": removed,
		"session_id": s.sid, "rewritten": []string{"session directory name", "runtime.set_binding.workspaceId", "cwd (system prompt, tool displays)", "state.json cwd and agents.main.homedir"}}}, nil
}
