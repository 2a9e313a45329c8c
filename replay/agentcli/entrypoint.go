package agentcli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
)

// Entrypoint resolves an agent CLI as a replay does: the explicit path
// (--agent-entrypoint), or binary on the PATH value path. It returns the
// absolute path and the launch source.
func Entrypoint(explicit, binary, path string) (string, string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", "", result.Fail(result.ConfigurationError, "--agent-entrypoint %s: %v", explicit, err)
		}
		st, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", "", result.Fail(result.ConfigurationError, "--agent-entrypoint %s does not exist", abs)
		case err != nil:
			return "", "", result.Fail(result.ConfigurationError, "--agent-entrypoint %s: %v", abs, err)
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", "", result.Fail(result.ConfigurationError, "--agent-entrypoint %s is not an executable file", abs)
		}
		return abs, result.LaunchExplicit, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the cwd
		}
		p := filepath.Join(dir, binary)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, result.LaunchPath, nil
		}
	}
	return "", "", result.Fail(result.ConfigurationError, "%s not found on PATH; install it (testdata/e2e/install-clis.sh installs the tested releases into .e2e/; 'pvisor doctor' checks what is installed) or pass --agent-entrypoint PATH", binary)
}

// Verdict checks what the CLI printed for --version against its
// launcher's shape and the tested range: the agent_version_check metadata
// (nil when the version could not be compared), and either a refusal or,
// with allowUntested, why the run is degraded.
func Verdict(l launch.Launcher, agent, version, printed string, allowUntested bool) (check map[string]any, degraded []string, err error) {
	rng := tested.RangeOf(agent)
	recognised := l.VersionShape().MatchString(printed)
	if !recognised {
		msg := fmt.Sprintf("%s --version printed %q, not the way %s prints its version", l.Binary(), FirstLine(printed), agent)
		if !allowUntested {
			return nil, nil, result.Fail(result.UnsupportedVersion, "%s: is --agent-entrypoint really %s? (a release that changed its output needs --allow-untested-version; quality becomes degraded)", msg, agent)
		}
		degraded = append(degraded, msg)
	}
	ok, err := rng.Contains(version)
	if err != nil {
		return nil, degraded, result.Fail(result.UnsupportedVersion, "%s version %q cannot be compared with the tested range %s: %v", l.Binary(), version, rng, err)
	}
	check = map[string]any{"tested_range": rng.String(), "version": version, "in_range": ok,
		"version_output_recognised": recognised}
	if ok {
		return check, degraded, nil
	}
	if !allowUntested {
		return check, nil, result.Fail(result.UnsupportedVersion, "%s %s is outside the tested range %s; install a tested version, or pass --allow-untested-version (quality becomes degraded)",
			l.Binary(), version, rng)
	}
	return check, append(degraded, fmt.Sprintf("%s %s is outside the tested range %s", l.Binary(), version, rng)), nil
}
