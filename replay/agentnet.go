package replay

import (
	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/egress"
	"github.com/pvisor/pvisor/run/netns"
)

// agentNamespace is --overlaynet-agent: a network namespace for the
// continued CLI whose only interface is lo, in which the bridge serves its
// usual address (the CLI's base URL is unchanged) and, with mode proxy,
// the run's egress proxy listens where replayed tools find it, so what the
// agent's own tools reach is decided and journaled as theirs is. It
// returns the namespace (the caller starts the CLI in it and closes it)
// and the variables to add to the CLI's environment.
func (r *run) agentNamespace(srv *bridge.Server) (*netns.NS, []string, error) {
	ns, err := netns.New()
	if err != nil {
		return nil, nil, fail(result.ContinuationError, "--overlaynet-agent: %v", err)
	}
	l, err := ns.Listen(srv.Addr())
	if err == nil {
		err = srv.ServeAlso(l)
	}
	if err != nil {
		ns.Close()
		return nil, nil, fail(result.ContinuationError, "--overlaynet-agent: the bridge in the agent's network namespace: %v", err)
	}
	pl, err := ns.Listen(egress.NamespaceAddr)
	if err != nil {
		ns.Close()
		return nil, nil, fail(result.ContinuationError, "--overlaynet-agent: the egress proxy in the agent's network namespace: %v", err)
	}
	env, err := r.toolsEnv().AgentEgress(pl)
	if err != nil {
		ns.Close()
		return nil, nil, err
	}
	return ns, env, nil
}
