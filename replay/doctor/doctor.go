// Package doctor checks the agent CLIs installed on a machine against
// pvisor: for each one it probes the version, then replays a bundled session
// recorded by a tested release and continues it with the CLI found here,
// through the bridge with the recorded upstream, in a loopback-only network
// namespace. It is the one command to run when a new CLI release lands.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// recording is the session agent's folder bundles for the doctor
// (launch.Agent.Doctor): one a tested release recorded against the fake
// model (a copy of testdata/e2e/sessions/<agent>@<oldest release>: the
// newest CLI continuing last month's session is what users do), its initial
// repository and its manifest.
func recording(agent string) (fs.FS, error) {
	a, ok := agents.Get(agent)
	if !ok || a.Doctor == nil {
		return nil, fmt.Errorf("no bundled %s recording", agent)
	}
	return a.Doctor, nil
}

// NetnsCommand is the hidden subcommand the doctor re-executes pvisor with
// inside a new network namespace: it brings lo up, then runs the rest of its
// arguments as a pvisor command line.
const NetnsCommand = "__pvisor-netns"

// EnterLoopback prepares the child side of NetnsCommand.
func EnterLoopback() error {
	if err := toolrun.LoopbackUp(); err != nil {
		return err
	}
	return toolrun.CheckLoopbackOnly()
}

// Options choose what to check.
type Options struct {
	// Agents to check; empty means every agent pvisor continues. An agent
	// named here that is not installed is a failure; otherwise it is listed
	// as not found.
	Agents []string
	// Entrypoint is the CLI to check instead of the one on PATH (with
	// exactly one agent).
	Entrypoint string
	// Self is the pvisor binary, re-executed for each check.
	Self string
	// WorkDir receives a directory per check (workspace, state, output);
	// Keep leaves it for inspection.
	WorkDir string
	Keep    bool
	// Path is where CLIs are looked up (PATH's value).
	Path string
	// Timeout bounds one check.
	Timeout time.Duration
}

// Row is one agent's check.
type Row struct {
	Agent       string  `json:"agent"`
	Status      string  `json:"status"` // ok, failed, not_found
	Entrypoint  string  `json:"entrypoint,omitempty"`
	Version     string  `json:"version,omitempty"`
	TestedRange string  `json:"tested_range"`
	InRange     bool    `json:"in_tested_range"`
	ReplayOK    bool    `json:"replay_ok"`
	ContinueOK  bool    `json:"continue_ok"`
	Envelope    string  `json:"envelope_variant,omitempty"`
	Network     string  `json:"network,omitempty"` // loopback-only namespace, or why not
	Seconds     float64 `json:"seconds"`
	ExitCode    int     `json:"exit_code"`
	Error       string  `json:"error,omitempty"`
	// Recording names the bundled session the check continued.
	Recording string `json:"recording,omitempty"`
	Output    string `json:"output_dir,omitempty"`
}

// Status values.
const (
	StatusOK       = "ok"
	StatusFailed   = "failed"
	StatusNotFound = "not_found"
)

// Agents are the agents the doctor can check: those with a bundled session.
func Agents() []string {
	var out []string
	for _, a := range agents.List() {
		if a.Doctor != nil {
			out = append(out, a.Name())
		}
	}
	slices.Sort(out)
	return out
}

// Check runs the check of every chosen agent, one after the other.
func Check(ctx context.Context, o Options) ([]Row, error) {
	names := slices.Clone(o.Agents)
	explicit := len(names) > 0
	if !explicit {
		names = Agents()
	}
	for i, n := range names {
		names[i] = agents.Canonical(n) // the existing tooling's names ("pi-agent")
		if !slices.Contains(Agents(), names[i]) {
			return nil, fmt.Errorf("doctor cannot check %q: it checks %s", n, strings.Join(Agents(), ", "))
		}
	}
	if o.Entrypoint != "" && len(names) != 1 {
		return nil, errors.New("--agent-entrypoint needs exactly one --agent")
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	var rows []Row
	for _, a := range names {
		r := check(ctx, o, a, explicit)
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	return rows, nil
}

// ExitCode is the doctor's exit status for rows: 0 when every check that
// ran passed, else the exit code of the first failed check (11 when a
// named CLI is missing or nothing was found at all).
func ExitCode(rows []Row) int {
	found := false
	for _, r := range rows {
		switch r.Status {
		case StatusFailed:
			if r.ExitCode == 0 {
				return 50
			}
			return r.ExitCode
		case StatusOK:
			found = true
		}
	}
	if !found {
		return 11
	}
	return 0
}

func check(ctx context.Context, o Options, agent string, explicit bool) (row Row) {
	rels := tested.Of(agent)
	row = Row{Agent: agent, TestedRange: tested.RangeOf(agent).String()}
	entry, _, err := agentcli.Entrypoint(o.Entrypoint, rels[0].Binary, o.Path)
	if err != nil {
		row.Status, row.Error = StatusNotFound, err.Error()
		if explicit {
			row.Status, row.ExitCode = StatusFailed, 11
		}
		return row
	}
	row.Entrypoint = entry
	start := time.Now()
	defer func() { row.Seconds = time.Since(start).Round(10 * time.Millisecond).Seconds() }()
	res, err := runCheck(ctx, o, agent, entry, &row)
	if err != nil {
		row.Status, row.ExitCode, row.Error = StatusFailed, 50, err.Error()
		// A CLI that is not this agent, or cannot run here, is refused
		// with its own category (11), not as pvisor's failure.
		if f := (*replay.Failure)(nil); errors.As(err, &f) {
			row.ExitCode = result.ExitCode(&result.Failure{Category: f.Category, Message: f.Message})
		}
		return row
	}
	fill(&row, res)
	return row
}

// runCheck lays out the bundled session and runs `pvisor replay` on it in
// a child, in a loopback-only network namespace when this process may make
// one (root).
func runCheck(ctx context.Context, o Options, agent, entry string, row *Row) (*result.Result, error) {
	dir, err := os.MkdirTemp(o.WorkDir, "doctor-"+agent+"-")
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	} else {
		row.Output = filepath.Join(dir, "out", "doctor")
	}
	base, err := recordingFor(ctx, agent, entry, dir)
	if err != nil {
		return nil, err
	}
	traj, steps, err := layOut(agent, base, dir, row)
	if err != nil {
		return nil, err
	}
	after := max(1, steps-1) // two model requests after the boundary: the first and a later one
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	args := []string{"replay", "--agent", agent, "--trajectory", traj, "--after-step", strconv.Itoa(after),
		"--upstream", "recorded", "--agent-entrypoint", entry, "--allow-untested-version",
		"--workspace", filepath.Join(dir, "ws"), "--state-dir", filepath.Join(dir, "state"),
		"--output-dir", filepath.Join(dir, "out"), "--run-id", "doctor", "--quiet"}
	cmd := exec.CommandContext(ctx, o.Self, append([]string{NetnsCommand}, args...)...)
	cmd.Env = []string{"PATH=" + o.Path, "HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + filepath.Join(dir, "tmp"),
		"LANG=C.UTF-8"}
	for _, d := range []string{"home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	row.Network = "loopback-only namespace"
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	} else {
		cmd.Args = append([]string{o.Self}, args...)
		row.Network = "host (not root: no network namespace)"
	}
	var stdout bytes.Buffer
	stderr := &launch.CappedBuffer{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	line := lastLine(stdout.Bytes())
	var res result.Result
	if err := json.Unmarshal(line, &res); err != nil || res.SchemaVersion == "" {
		return nil, fmt.Errorf("the check's pvisor printed no result line (%v): %s", runErr, firstLine(stderr.String()))
	}
	return &res, nil
}

// fill reads the check's v3 result into row.
func fill(row *Row, res *result.Result) {
	if res.Agent.Version != nil {
		row.Version = *res.Agent.Version
	}
	recognised := true
	if vc, ok := res.Metadata["agent_version_check"].(map[string]any); ok {
		row.InRange, _ = vc["in_range"].(bool)
		recognised, _ = vc["version_output_recognised"].(bool)
	}
	phase := ""
	if res.Phase != nil {
		phase = *res.Phase
	}
	row.ReplayOK = phase == result.PhaseReplayed || phase == result.PhaseContinued
	row.ContinueOK = res.Failure == nil && phase == result.PhaseContinued && res.AgentStatus == result.AgentCompleted
	if c, ok := res.Metadata["continuation"].(map[string]any); ok {
		if env, ok := c["envelope"].(map[string]any); ok {
			if v, ok := env["variants"].(map[string]any); ok {
				var names []string
				for k := range v {
					names = append(names, k)
				}
				slices.Sort(names)
				row.Envelope = strings.Join(names, ",")
			}
		}
	}
	if res.Failure != nil {
		row.Status, row.ExitCode, row.Error = StatusFailed, result.ExitCode(res.Failure), res.Failure.Message
	}
	if !recognised {
		// Checks run with --allow-untested-version, which lets this pass
		// as degraded in a replay; the doctor says plainly what it is.
		reasons, _ := res.Metadata["quality_reasons"].([]any)
		row.Status, row.ExitCode, row.Error = StatusFailed, 11, fmt.Sprintf("not a supported %s: %v", row.Agent, firstReason(reasons))
		return
	}
	if res.Failure != nil {
		return
	}
	if !row.ContinueOK {
		row.Status, row.ExitCode, row.Error = StatusFailed, 40, fmt.Sprintf("the agent did not complete (status %s)", res.AgentStatus)
		return
	}
	row.Status = StatusOK
}

func firstReason(rs []any) any {
	if len(rs) == 0 {
		return "its --version output is not that agent's"
	}
	return rs[0]
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
