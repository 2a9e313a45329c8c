package run

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/run/toolinit"
)

// The point of package toolinit: started as the init, this binary runs the
// runtime's and a handful of package inits, not package os's nor the
// program's others, before the init takes over (here: stops at its
// argument check).
func TestInitRunsBeforeTheProgramsPackages(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := &exec.Cmd{Path: exe, Args: []string{toolinit.Arg0}, Env: []string{"GODEBUG=inittrace=1"}, Stderr: &stderr}
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != toolinit.ExitSetup {
		t.Fatalf("the init without arguments: %v (want exit %d)", err, toolinit.ExitSetup)
	}
	var inits []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inits = append(inits, f[1])
		}
	}
	if len(inits) == 0 || len(inits) > 20 || slices.Contains(inits, "os") || slices.Contains(inits, "testing") {
		t.Errorf("package inits before the tool init: %v", inits)
	}
}

// The init runs with GOMAXPROCS set (see toolinit.Args); the tool gets
// its own environment back, with its own GOMAXPROCS or none.
func TestIsolationKeepsTheToolsGOMAXPROCS(t *testing.T) {
	requireIsolation(t)
	for _, tc := range []struct{ env, want string }{{"", "[unset]\n"}, {"GOMAXPROCS=7", "[7]\n"}} {
		env := append([]string(nil), testEnv...)
		if tc.env != "" {
			env = append(env, tc.env)
		}
		r := newTestRunner(t, Options{Env: env, Isolation: Isolation{Enabled: true}})
		res, err := r.Shell(context.Background(), ShellRequest{Command: `echo "[${GOMAXPROCS-unset}]"`, Dir: t.TempDir()})
		if err != nil || res.Stdout.String() != tc.want {
			t.Errorf("env %q: %v %q, want %q", tc.env, err, res.Stdout.String(), tc.want)
		}
	}
}
