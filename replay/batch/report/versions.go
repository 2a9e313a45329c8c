package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
)

// versionsOf reads, from a run's result, the release of the CLI that
// continued and the release that recorded the session
// (metadata.trajectory_agent_version); "" for what it does not say. The
// continuing release is the one the CLI itself gave
// (metadata.agent_version_check.version), not agent.version, which holds
// the recorded release until the CLI is asked: a run that failed before
// that, or started no CLI (prepare-only, replay-only), has none.
func versionsOf(res *result.Result) (continued, recorded string) {
	if check, ok := res.Metadata["agent_version_check"].(map[string]any); ok {
		continued, _ = check["version"].(string)
	}
	if v, ok := res.Metadata["trajectory_agent_version"].(string); ok {
		recorded = v
	}
	return continued, recorded
}

// inferVersions gives a run that failed before its CLI said its release
// the release the same CLI (entrypoint) gave every other run of the
// study, so its failure counts against that release rather than in a
// group of its own. A CLI that gave more than one release (replaced
// during the study) decides nothing, and a run that never resolved its
// CLI stays without a release.
func inferVersions(runs []Run) {
	seen := map[string]string{} // entrypoint → release, "" when ambiguous
	for _, r := range runs {
		entry := entrypointOf(r)
		if entry == "" || r.AgentVersion == "" {
			continue
		}
		if v, ok := seen[entry]; ok && v != r.AgentVersion {
			seen[entry] = ""
		} else if !ok {
			seen[entry] = r.AgentVersion
		}
	}
	for i := range runs {
		if runs[i].AgentVersion == "" {
			runs[i].AgentVersion = seen[entrypointOf(runs[i])]
		}
	}
}

func entrypointOf(r Run) string {
	var res struct {
		Agent struct {
			Type       string  `json:"type"`
			Entrypoint *string `json:"entrypoint"`
		} `json:"agent"`
	}
	if json.Unmarshal(r.Result, &res) != nil || res.Agent.Entrypoint == nil {
		return ""
	}
	return r.Agent + "\x00" + *res.Agent.Entrypoint
}

// compareVersions orders releases as versions (2.1.40 before 2.1.332),
// unknown ("") first, anything that is not a version by its text.
func compareVersions(a, b string) int {
	if a == b {
		return 0
	}
	va, errA := tested.ParseSemver(strings.TrimPrefix(a, "v"))
	vb, errB := tested.ParseSemver(strings.TrimPrefix(b, "v"))
	if errA == nil && errB == nil {
		if c := va.Compare(vb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// versionCell is "2.1.197 → 2.1.332": what recorded the session, what
// continued it.
func versionCell(recorded, continued string) string {
	if recorded == "" && continued == "" {
		return "–"
	}
	return orDash(recorded) + " → " + orDash(continued)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// recordedCell lists the releases that recorded a group's sessions.
func recordedCell(vs []string) string {
	if len(vs) == 0 {
		return "–"
	}
	return strings.Join(vs, ", ")
}

// provenance says which pvisor ran the runs and which built the report.
func provenance(rep *Report) string {
	by := "–"
	if len(rep.RunsBy) > 0 {
		by = strings.Join(rep.RunsBy, ", ")
	}
	return fmt.Sprintf("Runs by pvisor %s; report by pvisor %s.", by, orDash(rep.PvisorVersion))
}
