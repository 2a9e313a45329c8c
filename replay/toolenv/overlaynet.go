package toolenv

import (
	"os"

	"github.com/pvisor/pvisor/run/egress"
)

// Overlaynet is the [overlaynet] table, with pVisor's names (see
// egress.go for what each applies).
type Overlaynet struct {
	// Mode: "off" (default; tools share the host network), "proxy" (a
	// network namespace per call whose only way out is pvisor's egress
	// proxy), "auto" (proxy where namespaces can be made; otherwise off,
	// allowed only with policy public) or pvisor's own "deny" (only the
	// namespace's loopback, no proxy).
	Mode string
	// Policy of the proxy: public (default), deny or allowlist.
	Policy string
	// Allow holds the allowlist's host[:port] patterns (egress.ParsePattern).
	Allow []string `json:",omitempty"`
	// Agent puts the continued agent CLI behind the same policy: in a
	// network namespace of its own where the bridge is at its usual
	// address and, with mode proxy, its tools' only way out is the egress
	// proxy (pvisor's --overlaynet-agent; not pVisor's).
	Agent bool `json:",omitempty"`
}

// Overlaynet modes: pVisor's auto, off and proxy, and pvisor's own deny.
const (
	NetOff   = "off"
	NetDeny  = "deny"
	NetProxy = "proxy"
	NetAuto  = "auto"
)

// maxEgressAttempts bounds the attempts listed in the result's metadata;
// the journal file (logs/egress.jsonl) keeps up to egress.MaxJournal.
const maxEgressAttempts = 100

// EgressJournalFile is the egress journal, under the output dir's logs/.
const EgressJournalFile = "egress.jsonl"

// Effective is the mode and policy that apply: a policy or allowlist
// without a mode means auto (pVisor's default mode), and the proxy's
// default policy is public, as pVisor's.
func (o Overlaynet) Effective() (mode, policy string) {
	mode, policy = o.Mode, o.Policy
	if mode == "" && (policy != "" || len(o.Allow) > 0) {
		mode = NetAuto
	}
	if mode == "" {
		mode = NetOff
	}
	if (mode == NetProxy || mode == NetAuto) && policy == "" {
		policy = egress.PolicyPublic
	}
	return mode, policy
}

// Check validates [overlaynet] without touching the system beyond the
// effective uid: nothing that is asked for may be silently not enforced.
func (o Overlaynet) Check() error {
	mode, policy := o.Effective()
	switch mode {
	case NetOff, NetDeny, NetProxy, NetAuto:
	default:
		return configErr("--overlaynet %q: must be auto, off or proxy (pVisor's), or deny (tools see only their own loopback)", o.Mode)
	}
	switch o.Policy {
	case "", egress.PolicyPublic, egress.PolicyDeny, egress.PolicyAllowlist:
	default:
		return configErr("--overlaynet-policy %q: must be public, deny or allowlist", o.Policy)
	}
	switch {
	case mode == NetDeny && (o.Policy != "" || len(o.Allow) > 0):
		return configErr("[overlaynet] mode = \"deny\" gives tools no network at all, so a policy or allow list has nothing to decide; for pVisor's egress proxy use mode = \"proxy\" with policy = \"%s\"", policyOr(o.Policy))
	case mode == NetOff && (o.Policy == egress.PolicyDeny || o.Policy == egress.PolicyAllowlist || len(o.Allow) > 0):
		return configErr("--overlaynet-policy %s needs --overlaynet proxy (or auto): with --overlaynet off tools share the host network and nothing would be enforced", policyOr(o.Policy))
	}
	if o.Agent && mode != NetProxy && mode != NetDeny {
		return configErr("--overlaynet-agent needs --overlaynet proxy (the agent's tools go through the egress proxy) or deny (the agent reaches only the bridge); with --overlaynet %s nothing would be enforced on the agent", mode)
	}
	if mode == NetProxy || mode == NetAuto {
		if _, err := egress.ParsePolicy(policy, o.Allow); err != nil {
			return configErr("%v", err)
		}
	}
	if os.Geteuid() != 0 {
		switch {
		case mode == NetDeny:
			return configErr("[overlaynet] mode = \"deny\" needs root: tools get a network namespace of their own; run as root or use mode = \"off\"")
		case mode == NetProxy:
			return configErr("--overlaynet proxy needs root: tools get a network namespace whose only way out is pvisor's egress proxy; run as root, or use --overlaynet auto with --overlaynet-policy public (then tools share the host network, unrecorded)")
		case mode == NetAuto && policy != egress.PolicyPublic:
			return configErr("--overlaynet auto with --overlaynet-policy %s needs root to enforce the policy (a network namespace per call); run as root or drop the policy", policy)
		}
	}
	return nil
}

func policyOr(p string) string {
	if p == "" {
		return "allowlist"
	}
	return p
}

// Set reports whether any [overlaynet] key was given.
func (o Overlaynet) Set() bool {
	return o.Mode != "" || o.Policy != "" || len(o.Allow) > 0 || o.Agent
}
