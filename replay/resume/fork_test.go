package resume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// TestNativeFork runs a CLI's own fork command (a shell script standing in
// for it: it copies the session under the child id it prints) before the
// continuing launch: a good fork turns the call into a resume of the
// child; a failing command, no id, the parent's id or a child that is not
// in the store stop the run with a continuation error.
func TestNativeFork(t *testing.T) {
	const parent, child = "01a22998-569d-74b2-aebf-25f39bc1a17a", "01a22998-569d-74b2-aebf-25f39bc1a17b"
	dayDir := filepath.Join("sessions", "2026", "11", "29")
	file := func(id string) string { return filepath.Join(dayDir, "rollout-2026-11-29T10-00-00-"+id+".jsonl") }
	copyChild := `cp "$CODEX_HOME/` + file(parent) + `" "$CODEX_HOME/` + file(child) + `"; `
	idRe := regexp.MustCompile(`forked to (\S+)`)
	for _, c := range []struct {
		name, script, fail string
	}{
		{"ok", copyChild + `echo "forked to ` + child + `"`, ""},
		{"exit status", `echo oops >&2; exit 3`, "ended with status 3"},
		{"no id", copyChild + `echo done`, "no id"},
		{"the parent's id", `echo "forked to ` + parent + `"`, "the parent's id"},
		{"not in the store", `echo "forked to ` + child + `"`, "not found"},
		{"a path as id", `echo "forked to ../x"`, "not a plain id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
			root := filepath.Join(home, ".codex")
			for _, d := range []string{filepath.Join(root, dayDir), ws, filepath.Join(dir, "logs")} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, file(parent)), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			entry := filepath.Join(dir, "cli")
			if err := os.WriteFile(entry, []byte("#!/bin/sh\n"+c.script+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			r := &sessionRun{req: &SessionRequest{Mode: ModeFork}, store: codex.Sessions(), stateDir: dir, meta: map[string]any{},
				spec: resumeSpec{
					Fork: func(call launch.ResumeCall) (launch.Command, error) {
						return launch.Command{Args: []string{"fork", call.SID}, Env: []string{"CODEX_HOME=" + call.Root}}, nil
					},
					ForkID: func(out []byte) (string, error) {
						m := idRe.FindSubmatch(out)
						if m == nil {
							return "", errors.New("no id in its output")
						}
						return string(m[1]), nil
					}}}
			call := resumeCall{Fork: true, SID: parent, Home: home, Root: root, Main: filepath.Join(root, file(parent)),
				Env: []string{"PATH=" + os.Getenv("PATH")}}
			err := r.nativeFork(context.Background(), entry, launchInput{home: home, root: root, cwd: ws}, &call, filepath.Join(dir, "logs"))
			if c.fail != "" {
				if err == nil || !strings.Contains(err.Error(), c.fail) || Category(err) != result.ContinuationError {
					t.Fatalf("err = %v (%s), want a continuation error with %q", err, Category(err), c.fail)
				}
				if call.SID != parent || !call.Fork {
					t.Errorf("a failed fork changed the call: %+v", call)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if call.Fork || call.SID != child || call.Main != filepath.Join(root, file(child)) {
				t.Errorf("call after the fork: fork %v sid %s main %s", call.Fork, call.SID, call.Main)
			}
			if r.meta["fork_method"] != "native" || r.meta["fork_child"] != child {
				t.Errorf("meta = %v", r.meta)
			}
		})
	}
}
