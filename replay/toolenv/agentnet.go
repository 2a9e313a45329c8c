package toolenv

import (
	"net"

	"github.com/pvisor/pvisor/run/egress"
)

// AgentLabel names the continued agent CLI's connections in the egress
// journal, where replayed calls have their step and call id.
const AgentLabel = "agent"

// AgentNoProxy is the agent's NO_PROXY: its model requests go straight to
// the bridge on the namespace's loopback, everything else to the proxy.
const AgentNoProxy = "127.0.0.1,localhost,::1"

// AgentEgress serves the run's egress proxy on l (made inside the agent
// CLI's network namespace, at egress.NamespaceAddr) for --overlaynet-agent
// and returns the variables that point the agent's tools at it. Every
// connection is journaled as AgentLabel's. With mode deny there is no
// proxy: it returns nil and the agent reaches only the bridge.
func (t *Tools) AgentEgress(l net.Listener) ([]string, error) {
	mode, policy := t.cfg.Overlaynet.Effective()
	m, _ := t.meta["overlaynet"].(map[string]any)
	if m == nil {
		m = map[string]any{"mode": mode}
		t.meta["overlaynet"] = m
	}
	if mode != NetProxy {
		m["agent"] = map[string]any{"network": "loopback-only", "reaches": "the bridge only"}
		l.Close()
		return nil, nil
	}
	p, err := t.egressProxy(policy)
	if err != nil {
		l.Close()
		return nil, err
	}
	if _, ok := m["policy"]; !ok {
		m["policy"] = policy
		m["allow"] = append([]string{}, t.cfg.Overlaynet.Allow...)
	}
	m["agent"] = map[string]any{"network": "egress-proxy", "proxy": egress.ProxyURL, "no_proxy": AgentNoProxy, "label": AgentLabel}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed with the namespace's work
			}
			p.Serve(c, egress.Call{Label: AgentLabel})
		}
	}()
	var env []string
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env = append(env, name+"="+egress.ProxyURL)
	}
	return append(env, "NO_PROXY="+AgentNoProxy, "no_proxy="+AgentNoProxy), nil
}
