package openhands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/launch/pyrunner"
	pvresult "github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/openhands/runner"
)

// launcher continues an OpenHands V1 (software-agent-sdk)
// conversation with pvisor's runner (trajectory/openhands/runner), run with the python
// of the SDK's venv: it writes the rebuilt events into a new conversation's
// own event store, builds the agent with the recorded tools and an LLM
// pointed at the bridge (litellm's openai provider; the token is
// OPENAI_API_KEY, which the SDK does not persist) and lets
// LocalConversation run until the agent finishes. The entrypoint is the
// venv's `openhands-sdk` script (install-clis.sh writes it), which prints
// the SDK's version.
type launcher struct{}

func (launcher) Binary() string { return "openhands-sdk" }

func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^openhands-sdk \d+\.\d+\.\d+\S*$`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

// CheckTrajectory: the runner continues V1 event logs whose agent it can
// rebuild and whose prefix it can project; V0 trajectories were written by
// the OpenHands server, which pvisor does not run.
func (launcher) CheckTrajectory(t *trajectory.Trajectory, version string, req launch.Check) error {
	if req.BoundaryUserPrompt != "" {
		return pvresult.Fail(pvresult.ConfigurationError, "--boundary-user-prompt is not supported for openhands: its runner resumes at the boundary result")
	}
	if t.Format != FormatV1Events {
		return pvresult.Fail(pvresult.UnsupportedVersion, "an OpenHands %s trajectory (V0 events, the OpenHands 0.x server) cannot be continued: pvisor continues OpenHands V1 conversations with openhands-sdk %s; --replay-only replays it", t.Format, version)
	}
	a, ok := t.Step(req.AfterStep)
	if !ok {
		return nil // the plan reports the boundary
	}
	f, err := os.Open(req.Source)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := Continuable(f, a.Locator.Last, runner.ToolKinds); err != nil {
		return pvresult.Fail(pvresult.UnsupportedVersion, "openhands-sdk %s cannot continue this conversation: %v", version, err)
	}
	return nil
}

// Replies are the recorded responses after the boundary: each call with
// the arguments the model sent (the ActionEvent's tool_call), not the
// parsed action the decoder compares.
func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	t := c.Trajectory
	i := t.ActionIndex(c.AfterStep)
	if i < 0 {
		return nil, fmt.Errorf("step %d not found", c.AfterStep)
	}
	f, err := os.Open(c.Source)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fakemodel.Reply
	for n, a := range t.Actions[i+1:] {
		rep := fakemodel.Reply{Thinking: c.Paths.String(a.Reasoning), Text: c.Paths.String(a.Text)}
		for _, call := range a.Calls {
			ev := make([]byte, call.Locator.EndByte-call.Locator.StartByte)
			if _, err := f.ReadAt(ev, call.Locator.StartByte); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			args := []byte(gjson.GetBytes(ev, "tool_call.arguments").Str)
			if !gjson.ValidBytes(args) || !gjson.ParseBytes(args).IsObject() {
				return nil, fmt.Errorf("response %d after the boundary: call %s (%s) has arguments that are not a JSON object", n+1, call.ID, call.Name)
			}
			if args, _, err = c.Paths.JSON(args); err != nil {
				return nil, err
			}
			rep.ToolCalls = append(rep.ToolCalls, fakemodel.ToolCall{ID: call.ID, Name: call.Name, Arguments: args})
		}
		out = append(out, rep)
	}
	return out, nil
}

type staged struct {
	c       *launch.Continuation
	conv    *envelope.Runner
	py      string
	request string
	events  string // the conversation's events folder the runner fills
	prefix  int    // events in the rebuilt conversation
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	doc, _, err := c.Paths.JSON(c.Rebuilt)
	if err != nil {
		return nil, err
	}
	proj, err := Projection(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("the rebuilt conversation: %w", err)
	}
	conv, err := envelope.NewRunner("openhands", proj, c.Envelope)
	if err != nil {
		return nil, err
	}
	py, err := pyrunner.VenvPython(c.Entrypoint)
	if err != nil {
		return nil, err
	}
	id := uuid.New()
	base := filepath.Join(c.Home, "conversations")
	s := &staged{c: c, conv: conv, py: py, prefix: bytes.Count(doc, []byte("\n")),
		request: filepath.Join(c.Home, "pvisor-openhands-request.json"),
		events:  filepath.Join(base, hexID(id), "events")}
	rebuilt := filepath.Join(c.Home, "rebuilt-events.jsonl")
	if err := os.WriteFile(rebuilt, doc, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Home, "pvisor-openhands-runner.py"), runner.Script, 0o600); err != nil {
		return nil, err
	}
	req := map[string]any{"events": rebuilt, "persistence_dir": base, "conversation_id": id.String(),
		"workspace": c.Workspace, "model": "openai/openhands-continuation"}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return s, os.WriteFile(s.request, data, 0o600)
}

// hexID is the SDK's folder name for a conversation: the id's hex digits.
func hexID(id uuid.UUID) string { return fmt.Sprintf("%x", id[:]) }

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Program is the venv's python, which runs the runner.
func (s *staged) Program() string { return s.py }

// Command runs the runner with the SDK's banner and OpenTelemetry off.
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	return pyrunner.Command(s.c, s.request, "pvisor-openhands-runner.py", b,
		"OPENHANDS_SUPPRESS_BANNER=1", "OTEL_SDK_DISABLED=true")
}

// Collect joins the conversation's event files, in the SDK's order, into
// the V1 JSONL pvisor reads. The runner adds nothing to resume, so nothing
// is removed; the rebuilt events must still lead.
func (s *staged) Collect() (*launch.Collected, error) {
	names, err := filepath.Glob(filepath.Join(s.events, "event-*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the runner wrote no events (see logs/openhands-stderr.log)")
	}
	idx := func(name string) int {
		m := eventFileIndex().FindStringSubmatch(filepath.Base(name))
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	sort.Slice(names, func(i, j int) bool { return idx(names[i]) < idx(names[j]) })
	var out bytes.Buffer
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if err := json.Compact(&out, b); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
		out.WriteByte('\n')
	}
	if len(names) < s.prefix {
		return nil, fmt.Errorf("the continued conversation holds %d events, fewer than the %d it resumed from", len(names), s.prefix)
	}
	status := ""
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(s.events), "base_state.json")); err == nil {
		status = gjson.GetBytes(b, "execution_status").Str
	}
	return &launch.Collected{Session: out.Bytes(), Metadata: map[string]any{"removed_records": []any{},
		"execution_status": status, "staged_events": s.prefix}}, nil
}

// eventFileIndex is the SDK's event file name: event-<index>-<event id>.json.
var eventFileIndex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^event-(\d{5,})-[0-9a-fA-F-]{8,}\.json$`) })
