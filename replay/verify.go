package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pvisor/pvisor/replay/workspace"
	toolrun "github.com/pvisor/pvisor/run"
)

// Outcome grading and the workspace diff: what a study needs to say
// whether a continuation succeeded and what it changed.

const (
	// DefaultVerifyTimeout bounds a verify command that sets no timeout: a
	// test suite, not a server.
	DefaultVerifyTimeout = 10 * time.Minute
	// MaxVerifyTimeout is the longest verify_timeout accepted.
	MaxVerifyTimeout = 24 * time.Hour
	// maxVerifyCommand bounds the command text (it travels in every request).
	maxVerifyCommand = 16 << 10
	// verifyOutputKept is what the runner keeps of the command's output
	// (head and tail halves; logs/verify.log), verifyTail what the result
	// carries: the end of the output is where test runners print verdicts.
	verifyOutputKept = 64 << 10
	verifyTail       = 4 << 10

	RoleWorkspaceDiff   = "workspace_diff"
	FormatWorkspaceDiff = "pvisor/workspace-diff-v1"
	workspaceDiffFile   = "workspace.diff"

	eventVerifyFinished = "verify_finished"
)

// Verdicts of a verify command.
const (
	VerdictPass  = "pass"  // exit 0
	VerdictFail  = "fail"  // any other exit, or killed at its timeout
	VerdictError = "error" // it could not run at all
)

// Verification is metadata.verify.
type Verification struct {
	// ExitCode is the command's (128+N when killed by signal N); nil when
	// it did not run.
	ExitCode   *int    `json:"exit_code"`
	Seconds    float64 `json:"seconds"`
	OutputTail string  `json:"output_tail"`
	// OutputBytes is everything the command wrote, kept or not.
	OutputBytes int64  `json:"output_bytes"`
	Verdict     string `json:"verdict"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	Error       string `json:"error,omitempty"`
}

func (r *Request) checkVerify() error {
	switch {
	case len(r.Verify) > maxVerifyCommand:
		return configErr("verify is %d bytes; at most %d are accepted (put a long script in a file in the workspace and run that)", len(r.Verify), maxVerifyCommand)
	case strings.ContainsRune(r.Verify, 0):
		return configErr("verify contains a NUL byte")
	case r.VerifyTimeout < 0 || r.VerifyTimeout > MaxVerifyTimeout:
		return configErr("verify_timeout %s: must be at most %s (or unset for %s)", r.VerifyTimeout, MaxVerifyTimeout, DefaultVerifyTimeout)
	case r.Verify == "" && r.VerifyTimeout != 0:
		return configErr("verify_timeout (a batch's verify_timeout_ms) is set but verify is not: give the command to run")
	}
	return nil
}

// verify runs the verify command in the workspace with a Runner of its own,
// isolated and limited as the replayed tools were, and records its outcome.
// It never fails the run: a command that cannot run is verdict "error".
func (r *run) verify(ctx context.Context) {
	if r.req.Verify == "" {
		return
	}
	v := r.runVerify(ctx)
	r.res.Metadata["verify"] = v
	if r.journal != nil {
		_ = r.journal.Append(eventVerifyFinished, map[string]any{"verdict": v.Verdict, "exit_code": v.ExitCode, "seconds": v.Seconds})
	}
}

func (r *run) runVerify(ctx context.Context) Verification {
	bad := func(err error) Verification {
		return Verification{Verdict: VerdictError, Error: err.Error(), OutputTail: ""}
	}
	ws, err := r.workspace()
	if err != nil {
		return bad(err)
	}
	// The tools' isolation is recorded on the result already; keep that
	// record as it was whatever this call finds.
	prev, had := r.res.Metadata["tool_isolation"]
	iso, err := r.toolIsolation(ws)
	if had {
		r.res.Metadata["tool_isolation"] = prev
	}
	if err != nil {
		return bad(err)
	}
	if iso.Memory != nil {
		defer iso.Memory.Close()
	}
	tmp := os.TempDir()
	if r.stateDir != "" {
		tmp = r.stateDir
	}
	runner, err := toolrun.NewRunner(toolrun.Options{Env: r.toolsEnv().Vars(), Isolation: iso, MaxOutput: verifyOutputKept, TempDir: tmp})
	if err != nil {
		return bad(err)
	}
	defer runner.Close() // kills whatever the command left behind
	timeout := r.req.VerifyTimeout
	if timeout == 0 {
		timeout = DefaultVerifyTimeout
	}
	res, err := runner.Shell(ctx, toolrun.ShellRequest{Command: r.req.Verify, Dir: ws, Timeout: timeout,
		MergeStderr: true, KillBackground: true})
	if err != nil && !res.Canceled {
		return bad(err)
	}
	v := Verification{Seconds: res.Duration.Seconds(), OutputBytes: res.Combined.Total, TimedOut: res.TimedOut,
		OutputTail: tail(res.Combined.Data, verifyTail)}
	code := res.ExitCode
	v.ExitCode = &code
	switch {
	case res.Canceled:
		v.Verdict, v.Error = VerdictError, "interrupted"
	case res.TimedOut:
		v.Verdict, v.Error = VerdictFail, "killed at verify_timeout "+timeout.String()
	case code == 0:
		v.Verdict = VerdictPass
	default:
		v.Verdict = VerdictFail
	}
	if r.outputDir != "" {
		dir := filepath.Join(r.outputDir, "logs")
		if os.MkdirAll(dir, 0o700) == nil {
			_ = os.WriteFile(filepath.Join(dir, "verify.log"), res.Combined.Data, 0o600)
		}
	}
	return v
}

// tail is the last n bytes of b, starting at a whole UTF-8 character.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// snapshotWorkspace records the workspace after the prefix, when the run
// will continue and asked for a diff. A workspace that cannot be read
// gives no diff, recorded on the result, rather than a failed run.
func (r *run) snapshotWorkspace() *workspace.Snapshot {
	if !r.req.WorkspaceDiff || r.req.Mode != Continue {
		return nil
	}
	ws, err := r.workspace()
	if err == nil {
		var s *workspace.Snapshot
		if s, err = workspace.Take(ws, workspace.DefaultLimits); err == nil {
			return s
		}
	}
	r.res.Metadata["workspace_diff"] = map[string]any{"written": false, "error": err.Error()}
	return nil
}

// writeWorkspaceDiff writes workspace.diff: the continuation's changes.
func (r *run) writeWorkspaceDiff(before *workspace.Snapshot) {
	if before == nil {
		return
	}
	text, st, err := before.Diff()
	if err != nil {
		r.res.Metadata["workspace_diff"] = map[string]any{"written": false, "error": err.Error()}
		return
	}
	path := filepath.Join(r.outputDir, workspaceDiffFile)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		r.res.Metadata["workspace_diff"] = map[string]any{"written": false, "error": err.Error()}
		return
	}
	r.artifact(RoleWorkspaceDiff, FormatWorkspaceDiff, path)
	r.res.Metadata["workspace_diff"] = map[string]any{"written": true, "stats": st}
}
