//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/doctor"
	"github.com/pvisor/pvisor/replay/tested"
)

// pvisorBinary builds the static pvisor binary once per test.
func pvisorBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pvisor")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pvisor")
	cmd.Dir = projectRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pvisor: %v\n%s", err, out)
	}
	return bin
}

// doctorRun runs `pvisor doctor --json args...` and returns its rows, its
// exit code and its stderr.
func doctorRun(t *testing.T, pvisor string, args ...string) ([]doctor.Row, int, string) {
	t.Helper()
	out, code, stderr := execPvisor(t, pvisor, nil, append([]string{"doctor", "--json"}, args...)...)
	var rows []doctor.Row
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r doctor.Row
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("doctor printed something other than JSON rows: %v\n%s", err, stderr)
		}
		rows = append(rows, r)
	}
	return rows, code, stderr
}

// execPvisor runs the pvisor binary with a fresh HOME and TMPDIR, a plain
// PATH and env, and returns its stdout, exit code and stderr.
func execPvisor(t *testing.T, pvisor string, env []string, args ...string) ([]byte, int, string) {
	t.Helper()
	cmd := exec.Command(pvisor, args...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.Bytes(), code, stderr.String()
}

// TestDoctorPassesEveryTestedRelease: `pvisor doctor` with each installed
// tested release replays and continues its bundled session, with the
// version in range and an envelope variant named.
func TestDoctorPassesEveryTestedRelease(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the doctor's checks run in a loopback-only network namespace")
	}
	pvisor := pvisorBinary(t)
	for _, rel := range tested.Releases() {
		if !slices.Contains(doctor.Agents(), rel.Agent) {
			continue // no bundled session to check it with
		}
		t.Run(rel.Agent+"@"+rel.Version, func(t *testing.T) {
			rows, code, stderr := doctorRun(t, pvisor, "--agent", rel.Agent, "--agent-entrypoint", releaseBin(t, rel))
			if code != 0 || len(rows) != 1 {
				t.Fatalf("exit %d, rows %+v\n%s", code, rows, stderr)
			}
			r := rows[0]
			if r.Status != doctor.StatusOK || r.Version != rel.Version || !r.InRange || !r.ReplayOK || !r.ContinueOK ||
				r.Envelope == "" || r.Network != "loopback-only namespace" {
				t.Errorf("row %+v", r)
			}
			t.Logf("%s %s: %s in %.1fs", rel.Agent, rel.Version, r.Envelope, r.Seconds)
		})
	}
}

// TestDoctorFails: a binary that is not the agent, and a release whose
// resume envelope cannot be verified (here Claude Code resumed with a resume
// prompt of its own, which pvisor cannot tell from conversation), each fail
// with a clear line and a non-zero exit.
func TestDoctorFails(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the doctor's checks run in a loopback-only network namespace")
	}
	pvisor := pvisorBinary(t)
	rels := tested.Of("claude-code")
	claude := releaseBin(t, rels[0])
	dir := t.TempDir()
	write := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, entry string
		code        int
		says        string
	}{
		{"not an agent", write("python3", `echo "Python 3.11.2"`), 11, "not the way claude-code prints its version"},
		{"no version", "/bin/true", 11, "printed no version number"},
		{"envelope not verifiable", write("claude", `CLAUDE_CODE_RESUME_PROMPT="Keep going." exec `+claude+` "$@"`), 40,
			"only tool results (and the resume prompt) may end the resumed history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, code, stderr := doctorRun(t, pvisor, "--agent", "claude-code", "--agent-entrypoint", tc.entry)
			if code != tc.code || len(rows) != 1 || rows[0].Status != doctor.StatusFailed || !strings.Contains(rows[0].Error, tc.says) {
				t.Fatalf("exit %d, rows %+v, want exit %d saying %q\n%s", code, rows, tc.code, tc.says, stderr)
			}
			if rows[0].ContinueOK {
				t.Errorf("continue_ok on a failed check: %+v", rows[0])
			}
		})
	}
}
