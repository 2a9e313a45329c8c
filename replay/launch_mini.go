package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/minirunner"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/miniswe"
)

// miniLauncher continues a mini-swe-agent trajectory with pvisor's runner
// (replay/minirunner), run with the python of the `mini` entrypoint's venv:
// it builds mini's own agent, model and environment from the trajectory's
// saved config, restores agent.messages from the rebuilt trajectory and
// calls agent.step() until mini exits. The model is litellm's openai
// provider pointed at the bridge; the token is OPENAI_API_KEY, which no
// saved config holds. The step budget is the bridge's: over it the runner
// is stopped with SIGTERM and saves what it has.
type miniLauncher struct{}

func (miniLauncher) Binary() string { return "mini" }

// VersionShape is what VersionCommand prints.
func (miniLauncher) VersionShape() *regexp.Regexp { return miniVersionShape }

var miniVersionShape = regexp.MustCompile(`(?m)^mini-swe-agent \d+\.\d+\.\d+\S*$`)

func (miniLauncher) Protocol() bridge.Protocol { return bridge.Chat }

// VersionCommand asks the package: `mini --version` of 1.x prints a banner
// and no version.
func (miniLauncher) VersionCommand(entry string) ([]string, error) {
	py, err := venvPython(entry)
	if err != nil {
		return nil, err
	}
	return []string{py, "-c", "import minisweagent; print('mini-swe-agent', minisweagent.__version__)"}, nil
}

// venvPython is the interpreter the `mini` script runs with: its shebang
// (pip writes the venv's python there), else python next to it.
func venvPython(entry string) (string, error) {
	real, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return "", err
	}
	f, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if py, ok := strings.CutPrefix(strings.TrimSpace(line), "#!"); ok && filepath.IsAbs(py) && !strings.ContainsAny(py, " \t") {
		if st, err := os.Stat(py); err == nil && !st.IsDir() {
			return py, nil
		}
	}
	py := filepath.Join(filepath.Dir(real), "python")
	if _, err := os.Stat(py); err != nil {
		return "", fmt.Errorf("%s is not a script of a Python venv (no python next to it)", entry)
	}
	return py, nil
}

// CheckTrajectory: the runner continues a trajectory with the mini
// generation that wrote its format (1.x: mini-swe-agent-1, 2.x:
// mini-swe-agent-1.1), from a saved config; it takes no boundary prompt.
func (miniLauncher) CheckTrajectory(t *trajectory.Trajectory, version string, req launch.Check) error {
	if req.BoundaryUserPrompt != "" {
		return configErr("--boundary-user-prompt is not supported for mini-swe-agent: its runner resumes at the boundary observation")
	}
	major := strings.SplitN(version, ".", 2)[0]
	want := map[string]string{"1": miniswe.FormatV1}[major]
	if want == "" {
		want = miniswe.FormatV11
	}
	if t.Format != want {
		return fail(result.UnsupportedVersion, "mini-swe-agent %s cannot continue a %s trajectory (recorded with mini %s); install the mini release that wrote it and pass it as --agent-entrypoint",
			version, t.Format, orDefault(t.Version, "of unknown version"))
	}
	if len(t.Config) == 0 {
		return fail(result.UnsupportedVersion, "the trajectory has no saved info.config for the runner to build mini's agent from; pass the .traj.json mini wrote")
	}
	if err := miniswe.CheckContinuation(t); err != nil {
		return fail(result.UnsupportedAgent, "%v: refused before anything runs; --replay-only replays the prefix without the runner", err)
	}
	return nil
}

// Replies: 2.x calls the bash tool; 1.x's actions are fenced blocks in the
// reply text, which is all it sends back.
func (miniLauncher) Replies(c *Continuation) ([]fakemodel.Reply, error) {
	reps, err := chatReplies(c)
	if err != nil || c.Trajectory.Format != miniswe.FormatV1 {
		return reps, err
	}
	for i := range reps {
		reps[i].ToolCalls = nil
	}
	return reps, nil
}

// TextActions: 1.x sends no tools.
func (miniLauncher) TextActions(c *Continuation) bool {
	return c.Trajectory.Format == miniswe.FormatV1
}

type miniStaged struct {
	c       *Continuation
	conv    *envelope.Runner
	py      string
	request string
	output  string
	prefix  int // messages in the rebuilt trajectory
}

func (miniLauncher) Stage(c *Continuation) (Staged, error) {
	doc, _, err := c.Paths.JSON(c.Rebuilt)
	if err != nil {
		return nil, err
	}
	t := c.Trajectory
	proj, err := miniswe.Projection(bytes.NewReader(doc), t.Format)
	if err != nil {
		return nil, fmt.Errorf("the rebuilt trajectory: %w", err)
	}
	conv, err := envelope.NewMini(proj, c.Envelope)
	if err != nil {
		return nil, err
	}
	py, err := venvPython(c.Entrypoint)
	if err != nil {
		return nil, err
	}
	s := &miniStaged{c: c, conv: conv, py: py, prefix: len(proj),
		request: filepath.Join(c.Home, "pvisor-mini-request.json"), output: filepath.Join(c.Home, "continued.traj.json")}
	rebuilt := filepath.Join(c.Home, "rebuilt.traj.json")
	if err := os.WriteFile(rebuilt, doc, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Home, "pvisor-mini-runner.py"), minirunner.Script, 0o600); err != nil {
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

func (s *miniStaged) Conversation() envelope.Conversation { return s.conv }

// Program is the venv's python, which runs the runner.
func (s *miniStaged) Program() string { return s.py }

// Command runs the runner with mini's start-up prompts and cost tracking
// off and its global config dir in the staged home.
func (s *miniStaged) Command(b BridgeAddr) (Command, error) {
	home := s.c.Home
	return runnerCommand(s.c, s.request, "pvisor-mini-runner.py", b,
		"MSWEA_CONFIGURED=true", "MSWEA_SILENT_STARTUP=1", "MSWEA_COST_TRACKING=ignore_errors",
		"MSWEA_GLOBAL_CONFIG_DIR="+filepath.Join(home, ".config", "mini-swe-agent"))
}

// Collect reads the trajectory the runner saved. The runner adds nothing
// to resume, so there is nothing to remove; the prefix must be intact.
func (s *miniStaged) Collect() (*Collected, error) {
	data, err := os.ReadFile(s.output)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the runner saved no trajectory (see logs/mini-swe-agent-stderr.log)")
	}
	if err != nil {
		return nil, err
	}
	proj, err := miniswe.Projection(bytes.NewReader(data), s.c.Trajectory.Format)
	if err != nil {
		return nil, err
	}
	if len(proj) < s.prefix {
		return nil, fmt.Errorf("the continued trajectory holds %d messages, fewer than the %d it resumed from", len(proj), s.prefix)
	}
	return &Collected{Session: data, Metadata: map[string]any{"removed_records": []any{},
		"exit_status": gjson.GetBytes(data, "info.exit_status").String(), "staged_messages": s.prefix}}, nil
}
