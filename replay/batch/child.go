package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
)

// ChildCommand is the hidden subcommand that runs one replay of a batch. The
// request travels on stdin, never on disk or in argv, because it may hold
// the boundary prompt, whose text must never be stored.
const ChildCommand = "__batch-run"

// Executor runs one replay and returns its result line.
type Executor interface {
	Exec(ctx context.Context, req *replay.Request, log io.Writer) ([]byte, error)
}

// Child runs each replay as a child process of the same binary rather than
// in process. Why: a replay owns process-wide things (signal handlers, the
// overlay re-exec, the agent CLI's process tree, its environment), and a
// crash, a leak or a hang in one run must cost that run only. Children get
// their own process group, so a terminal's Ctrl-C reaches the batch alone,
// which then stops each running replay with SIGTERM: the replay's own
// shutdown path ends it with a result line and unmounts what it mounted.
// A process costs a few milliseconds, well inside the per-run budget.
type Child struct {
	Path  string        // the pvisor binary (os.Executable())
	Grace time.Duration // SIGTERM → SIGKILL delay (default 30s)
}

// maxResultLine bounds what a child may print on stdout.
const maxResultLine = 4 << 20

func (c Child) Exec(ctx context.Context, req *replay.Request, log io.Writer) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out := &launch.CappedBuffer{Max: maxResultLine}
	cmd := exec.Command(c.Path, ChildCommand)
	// argv[0] "pvisor" lets a multi-command test binary dispatch to pvisor.
	cmd.Args[0] = "pvisor"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(body), out, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		pgid := cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		grace := c.Grace
		if grace == 0 {
			grace = 30 * time.Second
		}
		select {
		case err = <-done:
		case <-time.After(grace):
			syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
	}
	if line := lastLine(out.Bytes()); line != nil {
		return line, nil
	}
	if err == nil {
		err = fmt.Errorf("exited without a result line")
	}
	return nil, err
}

// ChildMain is the child side: read the request from stdin, run it, print
// the result line. It returns the exit code.
func ChildMain(stdin io.Reader, stdout, stderr io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	var req replay.Request
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pvisor: %s is internal to 'pvisor batch run' (bad request on stdin: %v)\n", ChildCommand, err)
		res := result.New("", "")
		res.Fail(result.ConfigurationError, ChildCommand+" is internal to 'pvisor batch run'")
		stdout.Write(res.Line())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := replay.Run(ctx, &req)
	stdout.Write(res.Line())
	return result.ExitCode(res.Failure)
}

// lastLine is the last non-empty line of out, or nil.
func lastLine(out []byte) []byte {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil
	}
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return bytes.Clone(out)
}
