package agentproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/overlay"
)

// The agent CLI runs under an init of its own, as replayed tools do
// (issue 24 #7): pvisor re-executes itself as agentInitArg0 in a new PID
// and mount namespace, and the init starts the CLI as its child. When the
// CLI exits the init exits, and the kernel kills every process left in the
// namespace — a daemon the CLI started with setsid included, which a
// process-group kill misses. The init gets SIGKILL when pvisor dies
// (Pdeathsig), even when pvisor is SIGKILLed, and takes the namespace
// with it. A fresh /proc is mounted so the CLI's pids are its own.
// Without the privilege to make namespaces (not root), the CLI is started
// directly in its own process group, as before.
const agentInitArg0 = "pvisor-agent-init"

// agentStatusFD carries the CLI's exit from the init: "exit CODE SIGNAL".
const agentStatusFD = 3

func init() {
	if len(os.Args) > 0 && os.Args[0] == agentInitArg0 {
		runtime.LockOSThread()
		os.Exit(agentInit(os.Args[1:]))
	}
}

// containAgent turns cmd (resolved Path, Args) into a start of the init,
// when this process may make namespaces; status receives the CLI's exit.
func containAgent(cmd *exec.Cmd, status *os.File) bool {
	if cmd.Err != nil || os.Geteuid() != 0 || os.Getenv("PVISOR_AGENT_INIT") == "off" {
		return false
	}
	cmd.Args = append([]string{agentInitArg0, "--", cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	cmd.ExtraFiles = []*os.File{status}
	cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWPID | unix.CLONE_NEWNS
	return true
}

// agentInit is PID 1 of the CLI's namespaces. Args: -- <path> <argv0>
// <args…>.
func agentInit(args []string) int {
	status := os.NewFile(agentStatusFD, "agent-status")
	unix.CloseOnExec(agentStatusFD) // the CLI and its children never hold it
	if len(args) < 3 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "pvisor-agent-init: bad arguments")
		return 127
	}
	// A private /proc for the namespace; a CLI still runs without it.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err == nil {
		_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	// Signals pvisor sends the process group reach the CLI itself; the init
	// only has to outlive them (as PID 1 it ignores what it does not handle).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	cmd := exec.Command(args[1])
	cmd.Args = args[2:]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "pvisor-agent-init: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	// Reap everything; the CLI's exit ends the namespace, and what it left
	// running gets a SIGTERM before the kernel's SIGKILL.
	ws := overlay.ReapUntil(cmd.Process.Pid)
	overlay.EndNamespace(agentLeftoverGrace)
	code, sig := ws.ExitStatus(), 0
	if ws.Signaled() {
		code, sig = -1, int(ws.Signal())
	}
	if status != nil {
		fmt.Fprintf(status, "exit %d %d\n", code, sig)
	}
	if code < 0 {
		return 128 + sig
	}
	return code
}

// readAgentStatus parses the init's report ("" when it wrote none).
func readAgentStatus(line string) (code int, sig syscall.Signal, ok bool) {
	var s int
	if n, _ := fmt.Sscanf(strings.TrimSpace(line), "exit %d %d", &code, &s); n != 2 {
		return 0, 0, false
	}
	return code, syscall.Signal(s), true
}
