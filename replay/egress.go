package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/run/egress"
)

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

// effective is the mode and policy that apply: a policy or allowlist
// without a mode means auto (pVisor's default mode), and the proxy's
// default policy is public, as pVisor's.
func (o OverlaynetConfig) effective() (mode, policy string) {
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

// check validates [overlaynet] without touching the system beyond the
// effective uid: nothing that is asked for may be silently not enforced.
func (o OverlaynetConfig) check() error {
	mode, policy := o.effective()
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

// set reports whether any [overlaynet] key was given.
func (o OverlaynetConfig) set() bool {
	return o.Mode != "" || o.Policy != "" || len(o.Allow) > 0
}

// egressProxy is the run's egress proxy, made on first use: one for the
// whole run, so calls and boundary prompt commands share its journal.
func (r *run) egressProxy(policy string) (*egress.Proxy, error) {
	if r.egress != nil {
		return r.egress, nil
	}
	pol, err := egress.ParsePolicy(policy, r.req.Overlaynet.Allow)
	if err != nil {
		return nil, configErr("%v", err)
	}
	r.egress = egress.New(pol, egress.Options{})
	return r.egress, nil
}

// overlaynetMeta records what the run's [overlaynet] asked for and what
// applies; finishEgress adds the proxy's summary.
func (r *run) overlaynetMeta(applied, why string) {
	if !r.req.Overlaynet.set() {
		return
	}
	mode, policy := r.req.Overlaynet.effective()
	m := map[string]any{"mode": mode, "mode_applied": applied}
	if applied == NetProxy {
		m["policy"] = policy
		m["allow"] = append([]string{}, r.req.Overlaynet.Allow...)
		m["proxy"] = egress.ProxyURL + " inside each tool's own network namespace (its only interface is lo)"
	}
	if why != "" {
		m["reason"] = why
	}
	r.res.Metadata["overlaynet"] = m
}

// setEgressCall attributes the processes started from now on.
func (r *run) setEgressCall(c egress.Call) {
	if r.egress != nil {
		r.egress.SetCall(c)
	}
}

// finishEgress closes the proxy (every tunnel ends with the tools) and
// puts its summary, the first attempts and the journal file on the result.
// Idempotent; a no-op where no proxy ran (an overlay's parent: its worker
// recorded it).
func (r *run) finishEgress() {
	if r.egress == nil || r.egressDone {
		return
	}
	r.egressDone = true
	r.egress.Close()
	m, _ := r.res.Metadata["overlaynet"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		r.res.Metadata["overlaynet"] = m
	}
	sum := r.egress.Summary()
	m["summary"] = sum
	entries := r.egress.Journal()
	shown := entries
	if len(shown) > maxEgressAttempts {
		shown = shown[:maxEgressAttempts]
		m["attempts_truncated"] = true
	}
	m["attempts"] = shown
	if r.outputDir != "" {
		dir := filepath.Join(r.outputDir, "logs")
		path := filepath.Join(dir, EgressJournalFile)
		if err := os.MkdirAll(dir, 0o700); err == nil {
			err = egress.WriteJSONL(path, entries)
			if err == nil {
				m["journal"] = path
			} else {
				m["journal_error"] = err.Error()
			}
		}
	}
	if sum.Denied > 0 && r.progress != nil {
		// Not a failure: what the tools were refused is the policy working,
		// but their observations may differ from the recording because of it.
		r.warn(fmt.Sprintf("egress: %d of %d connection attempt(s) denied by --overlaynet-policy %s (see metadata.overlaynet)", sum.Denied, sum.Attempts, r.egress.Policy().Name))
	}
}

// egressCallOf names a trajectory call for the journal.
func egressCallOf(step int, id, tool string) egress.Call {
	return egress.Call{Step: step, CallID: id, Tool: strings.TrimSpace(tool)}
}
