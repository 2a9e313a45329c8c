package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// The contract with an agent's launcher is package launch's; these names
// keep the engine's files short.
type (
	Launcher         = launch.Launcher
	NativeCLINamer   = launch.NativeCLINamer
	VersionCommander = launch.VersionCommander
	TextActioner     = launch.TextActioner
	Programmer       = launch.Programmer
	Staged           = launch.Staged
	BridgeAddr       = launch.BridgeAddr
	Command          = launch.Command
	Collected        = launch.Collected
	StopSignaler     = launch.StopSignaler
	Continuation     = launch.Continuation
)

// launchers are the agents whose continuation still lives in this package;
// the registry (trajectory/agents) has the others. A variable so engine
// tests can add one.
var launchers = map[string]Launcher{
	"opencode":       opencodeLauncher{},
	"mini-swe-agent": miniLauncher{},
	"openhands":      openhandsLauncher{},
}

// launcherOf is the launcher that continues agent.
func launcherOf(agent string) (Launcher, bool) {
	if l, ok := launchers[agent]; ok {
		return l, true
	}
	if a, ok := agents.Get(agent); ok && a.Launcher != nil {
		return a.Launcher, true
	}
	return nil, false
}

// Entrypoint resolves an agent CLI as a replay does: the explicit path
// (--agent-entrypoint), or binary on the PATH value path. It returns the
// absolute path and the launch source.
func Entrypoint(explicit, binary, path string) (string, string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", "", configErr("--agent-entrypoint %s: %v", explicit, err)
		}
		st, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", "", configErr("--agent-entrypoint %s does not exist", abs)
		case err != nil:
			return "", "", configErr("--agent-entrypoint %s: %v", abs, err)
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", "", configErr("--agent-entrypoint %s is not an executable file", abs)
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
	return "", "", fail(result.ConfigurationError, "%s not found on PATH; install it (testdata/e2e/install-clis.sh installs the tested releases into .e2e/; 'pvisor doctor' checks what is installed) or pass --agent-entrypoint PATH", binary)
}

// checkVersion applies the tested range: outside it the run is refused unless
// allowed, and then degraded.
func (r *run) checkVersion(l Launcher, version, printed string) error {
	check, degraded, err := versionVerdict(l, r.req.Agent, version, printed, r.req.AllowUntestedVersion)
	if check != nil {
		r.res.Metadata["agent_version_check"] = check
	}
	for _, d := range degraded {
		r.degrade(d)
	}
	return err
}

// versionVerdict checks what the CLI printed for --version against its
// launcher's shape and the tested range: the agent_version_check metadata
// (nil when the version could not be compared), and either a refusal or,
// with allowUntested, why the run is degraded.
func versionVerdict(l Launcher, agent, version, printed string, allowUntested bool) (check map[string]any, degraded []string, err error) {
	rng := tested.RangeOf(agent)
	recognised := l.VersionShape().MatchString(printed)
	if !recognised {
		msg := fmt.Sprintf("%s --version printed %q, not the way %s prints its version", l.Binary(), firstLine(printed), agent)
		if !allowUntested {
			return nil, nil, fail(result.UnsupportedVersion, "%s: is --agent-entrypoint really %s? (a release that changed its output needs --allow-untested-version; quality becomes degraded)", msg, agent)
		}
		degraded = append(degraded, msg)
	}
	ok, err := rng.Contains(version)
	if err != nil {
		return nil, degraded, fail(result.UnsupportedVersion, "%s version %q cannot be compared with the tested range %s: %v", l.Binary(), version, rng, err)
	}
	check = map[string]any{"tested_range": rng.String(), "version": version, "in_range": ok,
		"version_output_recognised": recognised}
	if ok {
		return check, degraded, nil
	}
	if !allowUntested {
		return check, nil, fail(result.UnsupportedVersion, "%s %s is outside the tested range %s; install a tested version, or pass --allow-untested-version (quality becomes degraded)",
			l.Binary(), version, rng)
	}
	return check, append(degraded, fmt.Sprintf("%s %s is outside the tested range %s", l.Binary(), version, rng)), nil
}

// degrade marks the run degraded and says why.
func (r *run) degrade(reason string) {
	r.degraded = append(r.degraded, reason)
	r.res.Metadata["quality_reasons"] = r.degraded
}

// baseEnv is the environment the agent CLI gets before its launcher adds its
// own: the tools' environment (no credentials inherited) without anything
// that could point it at a model or a proxy other than the bridge.
func (r *run) baseEnv() []string {
	var env []string
	for _, kv := range r.toolEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if !redirectsTraffic(name) {
			env = append(env, kv)
		}
	}
	env = append(env, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
	return withPathFirst(env, r.cliPath)
}

// redirectsTraffic: provider endpoints (OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// OPENAI_API_BASE, …) and proxies.
func redirectsTraffic(name string) bool {
	up := strings.ToUpper(name)
	switch up {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasSuffix(up, "_BASE_URL") || strings.HasSuffix(up, "_API_BASE")
}

func envValue(env []string, name string) string { return launch.EnvValue(env, name) }

// setString is launch.SetString for the collectors still in this package.
func setString(line []byte, path, value string) []byte { return launch.SetString(line, path, value) }
