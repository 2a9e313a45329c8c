package miniswe

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/launch/pyrunner"
	pvresult "github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/miniswe/runner"
)

// launcher continues a mini-swe-agent trajectory with pvisor's runner
// (trajectory/miniswe/runner), run with the python of the `mini` entrypoint's venv:
// it builds mini's own agent, model and environment from the trajectory's
// saved config, restores agent.messages from the rebuilt trajectory and
// calls agent.step() until mini exits. The model is litellm's openai
// provider pointed at the bridge; the token is OPENAI_API_KEY, which no
// saved config holds. The step budget is the bridge's: over it the runner
// is stopped with SIGTERM and saves what it has.
type launcher struct{}

func (launcher) Binary() string { return "mini" }

// VersionShape is what VersionCommand prints.
func (launcher) VersionShape() *regexp.Regexp { return versionShape() }

var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^mini-swe-agent \d+\.\d+\.\d+\S*$`) })

func (launcher) Protocol() bridge.Protocol { return bridge.Chat }

// VersionCommand asks the package: `mini --version` of 1.x prints a banner
// and no version.
func (launcher) VersionCommand(entry string) ([]string, error) {
	py, err := pyrunner.VenvPython(entry)
	if err != nil {
		return nil, err
	}
	return []string{py, "-c", "import minisweagent; print('mini-swe-agent', minisweagent.__version__)"}, nil
}

// CheckTrajectory: the runner continues a trajectory with the mini
// generation that wrote its format (1.x: mini-swe-agent-1, 2.x:
// mini-swe-agent-1.1), from a saved config; it takes no boundary prompt.
func (launcher) CheckTrajectory(t *trajectory.Trajectory, version string, req launch.Check) error {
	if req.BoundaryUserPrompt != "" {
		return pvresult.Fail(pvresult.ConfigurationError, "--boundary-user-prompt is not supported for mini-swe-agent: its runner resumes at the boundary observation")
	}
	major := strings.SplitN(version, ".", 2)[0]
	want := map[string]string{"1": FormatV1}[major]
	if want == "" {
		want = FormatV11
	}
	if t.Format != want {
		return pvresult.Fail(pvresult.UnsupportedVersion, "mini-swe-agent %s cannot continue a %s trajectory (recorded with mini %s); install the mini release that wrote it and pass it as --agent-entrypoint",
			version, t.Format, cmp.Or(t.Version, "of unknown version"))
	}
	if len(t.Config) == 0 {
		return pvresult.Fail(pvresult.UnsupportedVersion, "the trajectory has no saved info.config for the runner to build mini's agent from; pass the .traj.json mini wrote")
	}
	if err := CheckContinuation(t); err != nil {
		return pvresult.Fail(pvresult.UnsupportedAgent, "%v: refused before anything runs; --replay-only replays the prefix without the runner", err)
	}
	return nil
}

// Replies: 2.x calls the bash tool; 1.x's actions are fenced blocks in the
// reply text, which is all it sends back.
func (launcher) Replies(c *launch.Continuation) ([]fakemodel.Reply, error) {
	reps, err := launch.ChatReplies(c)
	if err != nil || c.Trajectory.Format != FormatV1 {
		return reps, err
	}
	for i := range reps {
		reps[i].ToolCalls = nil
	}
	return reps, nil
}

// TextActions: 1.x sends no tools.
func (launcher) TextActions(c *launch.Continuation) bool {
	return c.Trajectory.Format == FormatV1
}

type staged struct {
	c       *launch.Continuation
	conv    *envelope.Runner
	py      string
	request string
	output  string
	prefix  int // messages in the rebuilt trajectory
}

func (launcher) Stage(c *launch.Continuation) (launch.Staged, error) {
	doc, _, err := c.Paths.JSON(c.Rebuilt)
	if err != nil {
		return nil, err
	}
	t := c.Trajectory
	proj, err := Projection(bytes.NewReader(doc), t.Format)
	if err != nil {
		return nil, fmt.Errorf("the rebuilt trajectory: %w", err)
	}
	conv, err := envelope.NewRunner("mini-swe-agent", proj, c.Envelope)
	if err != nil {
		return nil, err
	}
	py, err := pyrunner.VenvPython(c.Entrypoint)
	if err != nil {
		return nil, err
	}
	s := &staged{c: c, conv: conv, py: py, prefix: len(proj),
		request: filepath.Join(c.Home, "pvisor-mini-request.json"), output: filepath.Join(c.Home, "continued.traj.json")}
	rebuilt := filepath.Join(c.Home, "rebuilt.traj.json")
	if err := os.WriteFile(rebuilt, doc, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Home, "pvisor-mini-runner.py"), runner.Script, 0o600); err != nil {
		return nil, err
	}
	req := map[string]any{"trajectory": rebuilt, "output": s.output, "workspace": c.Workspace,
		"prefix_model_calls": t.ActionIndex(c.AfterStep) + 1}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return s, os.WriteFile(s.request, data, 0o600)
}

func (s *staged) Conversation() envelope.Conversation { return s.conv }

// Program is the venv's python, which runs the runner.
func (s *staged) Program() string { return s.py }

// Command runs the runner with mini's start-up prompts and cost tracking
// off and its global config dir in the staged home.
func (s *staged) Command(b launch.BridgeAddr) (launch.Command, error) {
	home := s.c.Home
	return pyrunner.Command(s.c, s.request, "pvisor-mini-runner.py", b,
		"MSWEA_CONFIGURED=true", "MSWEA_SILENT_STARTUP=1", "MSWEA_COST_TRACKING=ignore_errors",
		"MSWEA_GLOBAL_CONFIG_DIR="+filepath.Join(home, ".config", "mini-swe-agent"))
}

// Collect reads the trajectory the runner saved. The runner adds nothing
// to resume, so there is nothing to remove; the prefix must be intact.
func (s *staged) Collect() (*launch.Collected, error) {
	data, err := os.ReadFile(s.output)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the runner saved no trajectory (see logs/mini-swe-agent-stderr.log)")
	}
	if err != nil {
		return nil, err
	}
	proj, err := Projection(bytes.NewReader(data), s.c.Trajectory.Format)
	if err != nil {
		return nil, err
	}
	if len(proj) < s.prefix {
		return nil, fmt.Errorf("the continued trajectory holds %d messages, fewer than the %d it resumed from", len(proj), s.prefix)
	}
	return &launch.Collected{Session: data, Metadata: map[string]any{"removed_records": []any{},
		"exit_status": gjson.GetBytes(data, "info.exit_status").String(), "staged_messages": s.prefix}}, nil
}
