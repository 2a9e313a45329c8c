package batch

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/tested"
)

// CheckEntrypoints checks, before anything runs, the agent CLI of every
// run that continues an agent: it exists and is an executable file (an
// explicit agent_entrypoint, else the agent's binary on PATH), and with
// probe, that it is that agent's CLI (asked for its version the way a
// continuation asks, replay.ProbeAgentVersion). Each CLI is checked once
// however many runs use it; problems come back sorted, one per CLI.
// Prepare-only and replay-only runs start no CLI; runs with an
// agent_runtime take theirs from its manifest, which the run reads.
func CheckEntrypoints(ctx context.Context, runs []*Run, probe bool) []error {
	type cli struct{ agent, explicit string }
	users := map[cli][]string{}
	var order []cli
	for _, r := range runs {
		if r.req.Mode != replay.Continue || r.req.AgentRuntime != "" {
			continue
		}
		k := cli{r.Agent, r.req.AgentEntrypoint}
		if _, seen := users[k]; !seen {
			order = append(order, k)
		}
		users[k] = append(users[k], r.ID)
	}
	var errs []error
	for _, k := range order {
		if err := checkEntrypoint(ctx, k.agent, k.explicit, probe); err != nil {
			errs = append(errs, fmt.Errorf("%s (%d run(s), first %s)", err, len(users[k]), users[k][0]))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

func checkEntrypoint(ctx context.Context, agent, explicit string, probe bool) error {
	binary := agent
	if rels := tested.Of(agent); len(rels) > 0 {
		binary = rels[len(rels)-1].Binary
	}
	entry, _, err := agentcli.Entrypoint(explicit, binary, os.Getenv("PATH"))
	if err != nil {
		// The engine's words name the flag; a batch file has the key.
		msg := strings.ReplaceAll(err.Error(), "--agent-entrypoint", "agent_entrypoint")
		if strings.Contains(msg, "install-clis.sh") {
			return fmt.Errorf("%s: %s", agent, msg) // the engine already says where CLIs come from
		}
		return fmt.Errorf("%s: %s", agent, entrypointHint(msg))
	}
	if !probe {
		return nil
	}
	dir, err := os.MkdirTemp("", "pvisor-batch-probe-")
	if err != nil {
		return fmt.Errorf("%s: %s: %v", agent, entry, err)
	}
	defer os.RemoveAll(dir)
	if _, err := replay.ProbeAgentVersion(ctx, agent, entry, dir, os.Geteuid() == 0); err != nil {
		return fmt.Errorf("%s: %s is not a CLI pvisor can continue %s with: %v", agent, entry, agent, err)
	}
	return nil
}

// entrypointHint adds where the tested CLIs come from.
func entrypointHint(msg string) string {
	return msg + " (testdata/e2e/install-clis.sh installs the tested CLIs as .e2e/bin/<binary> and .e2e/cli/<agent>@<version>/node_modules/.bin/<binary>)"
}
