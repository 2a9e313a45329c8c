package agentproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// daemonsWith lists the host pids whose command line holds marker.
func daemonsWith(marker string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// Issue 24 #7: a daemon the agent CLI starts with setsid leaves its process
// group, and used to outlive the run; under the agent's own init it ends
// with the CLI. The CLI's exit code and output come through unchanged.
func TestAgentDaemonEndsWithTheCLI(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the agent init needs root (a PID namespace)")
	}
	marker := fmt.Sprintf("pvisor-daemon-%d-%d", os.Getpid(), time.Now().UnixNano())
	script := filepath.Join(t.TempDir(), "cli")
	body := "#!/bin/sh\nsetsid sh -c 'sleep 300; : " + marker + "' </dev/null >/dev/null 2>&1 &\nsleep 0.2\necho out-$$\nexit 7\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	p, err := Start(Spec{Entry: script, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: "/", Stdout: &stdout, Stderr: &stderr}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	code, sig, err := p.Wait()
	if err != nil || code != 7 || sig != "" {
		t.Fatalf("wait = %d %q %v (stderr %s)", code, sig, err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "out-") {
		t.Errorf("stdout %q", stdout.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for left := daemonsWith(marker); len(left) > 0; left = daemonsWith(marker) {
		if time.Now().After(deadline) {
			for _, pid := range left {
				var n int
				fmt.Sscan(pid, &n)
				if proc, err := os.FindProcess(n); err == nil {
					proc.Kill()
				}
			}
			t.Fatalf("the CLI's setsid daemon outlived it: pids %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A CLI a signal ends is reported as such through the init.
func TestAgentSignalThroughInit(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nkill -TERM $$\nsleep 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p, err := Start(Spec{Entry: script, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: "/", Stdout: &out, Stderr: &out}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	if code, sig, err := p.Wait(); err != nil || code != -1 || sig != "terminated" {
		t.Fatalf("wait = %d %q %v (%s)", code, sig, err, out.String())
	}
}

// What the CLI leaves running gets SIGTERM before SIGKILL, so a script's
// EXIT trap still runs: pyenv's rehash lock, left behind by login shells
// that were SIGKILLed, stalled every later login shell for 60 s.
func TestAgentLeftoversRunTheirExitTraps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		contain bool
		detach  string // how the leftover leaves the CLI
	}{
		{"own init, setsid", true, "setsid "},
		{"own process group", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.contain && os.Geteuid() != 0 {
				t.Skip("the agent init needs root (a PID namespace)")
			}
			dir := t.TempDir()
			lock, ready := filepath.Join(dir, "lock"), filepath.Join(dir, "ready")
			leftover := "trap 'rm -f " + lock + "' EXIT; : > " + lock + "; : > " + ready + "; sleep 30"
			body := "#!/bin/sh\n" + tc.detach + "bash -c \"" + leftover + "\" </dev/null >/dev/null 2>&1 &\n" +
				"while [ ! -e " + ready + " ]; do sleep 0.01; done\nexit 0\n"
			script := filepath.Join(dir, "cli")
			if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			p, err := startIn(Spec{Entry: script, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: "/", Stdout: &out, Stderr: &out}, new(atomic.Int64), tc.contain)
			if err != nil {
				t.Fatal(err)
			}
			if (p.status != nil) != tc.contain {
				t.Fatalf("contained = %v, want %v", p.status != nil, tc.contain)
			}
			if code, sig, err := p.Wait(); err != nil || code != 0 || sig != "" {
				t.Fatalf("wait = %d %q %v (%s)", code, sig, err, out.String())
			}
			// wait returns once the leftovers are gone or were SIGKILLed.
			if _, err := os.Stat(lock); err == nil {
				t.Fatalf("the leftover's EXIT trap did not run: %s is still there", lock)
			}
		})
	}
}
