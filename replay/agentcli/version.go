// Package agentcli finds an agent's CLI and tells which release it is: the
// entrypoint (--agent-entrypoint, --agent-runtime, PATH), the npm package a
// Node CLI belongs to and the node it needs, the version it prints (probed
// in a throwaway home, cached by file identity) and the verdict against the
// tested range.
package agentcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/replay/launch"
)

// versionInText finds x.y.z (with a pre-release) not inside a longer dotted
// number, after anything: "codex-cli 0.171.0", "pi v0.73.1".
var versionInText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^\d.])(\d+\.\d+\.\d+(?:-[0-9A-Za-z][0-9A-Za-z.-]*)?)`)
})

// Version probing limits: a CLI that hangs or floods on --version must not
// stall the run or fill memory.
const (
	probeTimeout = 20 * time.Second
	probeMaxOut  = 64 << 10
)

// isolatedHome returns env with HOME, TMPDIR and the XDG directories
// moved under dir (created): an agent CLI run only to print its version
// still writes caches and temp files (~/.codex/tmp), which belong in the
// state dir, not in the user's home or /tmp.
func IsolatedHome(env []string, dir string) ([]string, error) {
	vars := map[string]string{"HOME": "home", "TMPDIR": "tmp", "XDG_CONFIG_HOME": "home/.config",
		"XDG_CACHE_HOME": "home/.cache", "XDG_DATA_HOME": "home/.local/share", "XDG_STATE_HOME": "home/.local/state"}
	out := make([]string, 0, len(env)+len(vars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[name]; !ok {
			out = append(out, kv)
		}
	}
	for name, sub := range vars {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		out = append(out, name+"="+p)
	}
	sort.Strings(out)
	return out, nil
}

// probeVersion runs `entry --version` with env and returns the first version
// number it prints (some CLIs print on stderr) and the whole output.
func ProbeVersion(ctx context.Context, entry string, env []string) (version, printed string, err error) {
	return ProbeVersionWith(ctx, []string{entry, "--version"}, env)
}

// probeVersionWith runs argv instead of `entry --version`, for CLIs that
// print their version another way (VersionCommander).
func ProbeVersionWith(ctx context.Context, argv []string, env []string) (version, printed string, err error) {
	return probeVersionIn(ctx, argv, env, nil)
}

// probeVersionIn is probeVersionWith with the child's process attributes
// (a network namespace of its own, say).
func probeVersionIn(ctx context.Context, argv []string, env []string, attr *syscall.SysProcAttr) (version, printed string, err error) {
	entry := strings.Join(argv, " ")
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = attr
	out := &CappedBuffer{Max: probeMaxOut}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	text := strings.TrimSpace(out.String())
	switch {
	case ctx.Err() != nil:
		return "", "", fmt.Errorf("%s did not finish within %s", entry, probeTimeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", "", fmt.Errorf("%s failed (%v): %s", entry, err, FirstLine(text))
		}
		return "", "", fmt.Errorf("%s: %v", entry, err)
	}
	m := versionInText().FindStringSubmatch(text)
	if m == nil {
		return "", "", fmt.Errorf("%s printed no version number: %q", entry, FirstLine(text))
	}
	return m[1], text, nil
}

// Probe asks entry which release of agent's CLI it is, the way a
// continuation does (the launcher's own version command, a throwaway home
// under dir, no cache), and checks the output has the shape l expects. With
// offline (root only) the probe runs in a network namespace of its own: a
// Python agent's import must not reach the network. It is for choosing
// among recordings (the doctor); the run itself probes again.
func Probe(ctx context.Context, l launch.Launcher, agent, entry, dir string, offline bool) (string, error) {
	base := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	cliPath, _, err := CheckCLI(ctx, agent, entry, base)
	if err != nil {
		return "", err
	}
	env, err := IsolatedHome(WithPathFirst(base, cliPath), dir)
	if err != nil {
		return "", err
	}
	argv := []string{entry, "--version"}
	if vc, ok := l.(launch.VersionCommander); ok {
		if argv, err = vc.VersionCommand(entry); err != nil {
			return "", err
		}
	}
	var attr *syscall.SysProcAttr
	if offline {
		attr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	}
	version, printed, err := probeVersionIn(ctx, argv, env, attr)
	if err != nil {
		return "", err
	}
	if !l.VersionShape().MatchString(printed) {
		return "", fmt.Errorf("%s printed %q, not the way %s prints its version", entry, FirstLine(printed), agent)
	}
	return version, nil
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// CappedBuffer keeps the first Max bytes written and discards the rest;
// launchers that run their CLI use it too, so it is package launch's.
type CappedBuffer = launch.CappedBuffer
