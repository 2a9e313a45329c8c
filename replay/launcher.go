package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/launch"
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

// launcherOf is the launcher that continues agent.
func launcherOf(agent string) (Launcher, bool) {
	if a, ok := agents.Get(agent); ok && a.Launcher != nil {
		return a.Launcher, true
	}
	return nil, false
}

// checkVersion applies the tested range: outside it the run is refused unless
// allowed, and then degraded.
func (r *run) checkVersion(l Launcher, version, printed string) error {
	check, degraded, err := agentcli.Verdict(l, r.req.Agent, version, printed, r.req.AllowUntestedVersion)
	if check != nil {
		r.res.Metadata["agent_version_check"] = check
	}
	for _, d := range degraded {
		r.degrade(d)
	}
	return err
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
	for _, kv := range r.toolsEnv().Vars() {
		name, _, _ := strings.Cut(kv, "=")
		if !RedirectsTraffic(name) {
			env = append(env, kv)
		}
	}
	env = append(env, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
	return agentcli.WithPathFirst(env, r.cliPath)
}

// RedirectsTraffic: provider endpoints (OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// OPENAI_API_BASE, …) and proxies.
func RedirectsTraffic(name string) bool {
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

// ProbeAgentVersion asks entry which release of agent's CLI it is, the way
// a continuation does; see agentcli.Probe. It is for choosing among
// recordings (the doctor, batch checks); the run itself probes again.
func ProbeAgentVersion(ctx context.Context, agent, entry, dir string, offline bool) (string, error) {
	l, ok := launcherOf(agent)
	if !ok {
		return "", fmt.Errorf("pvisor does not continue %s", agent)
	}
	return agentcli.Probe(ctx, l, agent, entry, dir, offline)
}
