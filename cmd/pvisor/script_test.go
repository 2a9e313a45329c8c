package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pvisor": func() { os.Exit(pvisorMain()) },
		"rss":    func() { os.Exit(rssMain()) },
	})
}

// TestScripts runs the CLI scripts in testdata/script: each reads like a
// shell session a user would type. $TRAJ points at the bundled samples,
// $E2E at the sessions recorded with the real CLIs.
func TestScripts(t *testing.T) {
	traj, err := filepath.Abs("../../testdata/trajectories")
	if err != nil {
		t.Fatal(err)
	}
	e2e, err := filepath.Abs("../../testdata/e2e/sessions")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"peakrss": cmdPeakRSS},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("TRAJ", traj)
			env.Setenv("E2E", e2e)
			return nil
		},
	})
}
