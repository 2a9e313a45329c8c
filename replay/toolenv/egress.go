package toolenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/run/egress"
)

// egressProxy is the run's egress proxy, made on first use: one for the
// whole run, so calls and boundary prompt commands share its journal.
func (t *Tools) egressProxy(policy string) (*egress.Proxy, error) {
	if t.proxy != nil {
		return t.proxy, nil
	}
	pol, err := egress.ParsePolicy(policy, t.cfg.Overlaynet.Allow)
	if err != nil {
		return nil, configErr("%v", err)
	}
	t.proxy = egress.New(pol, egress.Options{})
	return t.proxy, nil
}

// overlaynetMeta records what the run's [overlaynet] asked for and what
// applies; finishEgress adds the proxy's summary.
func (t *Tools) overlaynetMeta(applied, why string) {
	if !t.cfg.Overlaynet.Set() {
		return
	}
	mode, policy := t.cfg.Overlaynet.Effective()
	m := map[string]any{"mode": mode, "mode_applied": applied}
	if applied == NetProxy {
		m["policy"] = policy
		m["allow"] = append([]string{}, t.cfg.Overlaynet.Allow...)
		m["proxy"] = egress.ProxyURL + " inside each tool's own network namespace (its only interface is lo)"
	}
	if why != "" {
		m["reason"] = why
	}
	t.meta["overlaynet"] = m
}

// SetCall attributes the processes started from now on.
func (t *Tools) SetCall(c egress.Call) {
	if t.proxy != nil {
		t.proxy.SetCall(c)
	}
}

// Finish closes the proxy (every tunnel ends with the tools) and
// puts its summary, the first attempts and the journal file on the result.
// Idempotent; a no-op where no proxy ran (an overlay's parent: its worker
// recorded it).
func (t *Tools) Finish(outputDir string) {
	if t.proxy == nil || t.done {
		return
	}
	t.done = true
	t.proxy.Close()
	m, _ := t.meta["overlaynet"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		t.meta["overlaynet"] = m
	}
	sum := t.proxy.Summary()
	m["summary"] = sum
	entries := t.proxy.Journal()
	shown := entries
	if len(shown) > maxEgressAttempts {
		shown = shown[:maxEgressAttempts]
		m["attempts_truncated"] = true
	}
	m["attempts"] = shown
	if outputDir != "" {
		dir := filepath.Join(outputDir, "logs")
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
	if sum.Denied > 0 && t.warn != nil {
		// Not a failure: what the tools were refused is the policy working,
		// but their observations may differ from the recording because of it.
		t.warn(fmt.Sprintf("egress: %d of %d connection attempt(s) denied by --overlaynet-policy %s (see metadata.overlaynet)", sum.Denied, sum.Attempts, t.proxy.Policy().Name))
	}
}

// CallOf names a trajectory call for the journal.
func CallOf(step int, id, tool string) egress.Call {
	return egress.Call{Step: step, CallID: id, Tool: strings.TrimSpace(tool)}
}
