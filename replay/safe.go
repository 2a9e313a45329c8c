package replay

import (
	"net"
	"net/url"
	"os"
	"slices"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/run/egress"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// applySafe expands --safe, pVisor's preset, into what it stands for:
// tool isolation (which --policy enforce and --overlaynet proxy need), an
// overlay over the workspace (the worker sees the whole tree through it)
// whose changes are dropped, the tools' egress limited to the model host,
// and --policy enforce. An explicit option that contradicts the preset is
// refused rather than one of the two silently winning; --executor container
// is not a contradiction but a stricter place for the same tools. Applying it twice
// (the overlay worker validates the request again) changes nothing.
func (r *Request) applySafe() error {
	if !r.Run.Safe {
		return nil
	}
	conflict := func(opt, got, want string) error {
		return configErr("--safe sets %s %s; %s %s contradicts it: drop one of the two", opt, want, opt, got)
	}
	switch {
	case r.Run.Policy != "" && r.Run.Policy != toolenv.PolicyEnforce:
		return conflict("--policy", r.Run.Policy, toolenv.PolicyEnforce)
	case r.Run.Executor != "" && r.Run.Executor != toolenv.ExecutorHost && r.Run.Executor != toolenv.ExecutorContainer:
		return conflict("--executor", r.Run.Executor, toolenv.ExecutorHost)
	case r.Overlay.Commit != "" && r.Overlay.Commit != "drop":
		return conflict("--overlayfs-commit", r.Overlay.Commit, "drop")
	case r.Overlaynet.Mode != "" && r.Overlaynet.Mode != toolenv.NetProxy:
		return conflict("--overlaynet", r.Overlaynet.Mode, toolenv.NetProxy)
	case r.Overlaynet.Policy != "" && r.Overlaynet.Policy != egress.PolicyAllowlist && r.Overlaynet.Policy != egress.PolicyDeny:
		return conflict("--overlaynet-policy", r.Overlaynet.Policy, egress.PolicyAllowlist)
	}
	host, err := r.modelHost()
	if err != nil {
		return err
	}
	allow, policy := []string{host}, egress.PolicyAllowlist
	if host == "" {
		allow, policy = nil, egress.PolicyDeny // --upstream recorded: no model host
	}
	if (len(r.Overlaynet.Allow) > 0 || r.Overlaynet.Policy != "") && (!slices.Equal(r.Overlaynet.Allow, allow) || r.Overlaynet.Policy != policy) {
		return configErr("--safe limits the tools' egress to the model host (%s); --overlaynet-policy/--overlaynet-allow %s %v contradict it: drop them, or drop --safe and compose the options", orNone(host), r.Overlaynet.Policy, r.Overlaynet.Allow)
	}
	if r.Overlay.Path == "" {
		ws := r.Workspace
		if ws == "" {
			if ws, err = os.Getwd(); err != nil {
				return configErr("--safe: the workspace: %v", err)
			}
		}
		r.Overlay.Path = ws
	}
	// A container composes: the preset's isolation, policy and network
	// apply to tools that run in its root.
	r.Run.Policy = toolenv.PolicyEnforce
	if r.Run.Executor != toolenv.ExecutorContainer {
		r.Run.Executor = toolenv.ExecutorHost
	}
	r.Overlay.Commit = "drop"
	r.Overlaynet = OverlaynetConfig{Mode: toolenv.NetProxy, Policy: policy, Allow: allow, Agent: r.Overlaynet.Agent}
	return nil
}

// modelHost is host:port of the model service the bridge forwards to, ""
// when the upstream is the recording.
func (r *Request) modelHost() (string, error) {
	name := r.Upstream
	if name == UpstreamRecorded {
		return "", nil
	}
	if name == "" {
		a, ok := agents.Get(r.Agent)
		if !ok || a.Launcher == nil {
			return "", configErr("--safe: %s cannot be continued, so it has no model host to allow; use --prepare-only, or compose the options without --safe", r.Agent)
		}
		name = string(a.Launcher.Protocol())
	}
	p, err := bridge.ParseProtocol(name)
	if err != nil {
		return "", configErr("--upstream: %v, or %s", err, UpstreamRecorded)
	}
	cfg, err := r.Endpoint.Config(bridge.UpstreamConfig{Protocol: p}, os.Getenv)
	if err != nil {
		return "", err
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = bridge.DefaultOpenAIBaseURL
		if p == bridge.Anthropic {
			cfg.BaseURL = bridge.DefaultAnthropicBaseURL
		}
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Hostname() == "" {
		return "", configErr("--safe: model base URL %q has no host", cfg.BaseURL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80"}[u.Scheme]
		if port == "" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

func orNone(h string) string {
	if h == "" {
		return "none: --upstream recorded"
	}
	return h
}

// SafeMeta is what --safe applied, for the result's metadata.
func (r *Request) safeMeta() map[string]any {
	return map[string]any{
		"tool_isolation": true,
		"overlayfs":      map[string]any{"path": r.Overlay.Path, "commit": r.Overlay.Commit},
		"overlaynet":     map[string]any{"mode": r.Overlaynet.Mode, "policy": r.Overlaynet.Policy, "allow": r.Overlaynet.Allow},
		"policy":         r.Run.Policy,
		"executor":       r.Run.Executor,
		"note":           "pVisor's --safe preset as pvisor builds it; the continued agent CLI itself is not under the file policy",
	}
}
