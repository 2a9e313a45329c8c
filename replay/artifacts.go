package replay

import (
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/pi"
)

// Artifact roles and formats of the sandbox-playback contract, exactly as
// pVisor writes them (reference pvisor.md §4.4): orchestrators written for
// it look artifacts up by role and read the files unchanged. Our extras are
// additions, never renames.
const (
	RolePlan                  = "playback_plan"
	RoleEvents                = "replay_events"
	RoleSummary               = "replay_summary"
	RoleObservationComparison = "observation_comparison"
	RoleNextActionComparison  = "next_action_comparison"
	RolePreparedPrefix        = "prepared_native_prefix"
	RoleReconstructed         = "reconstructed_native_trajectory"
	RoleContinued             = "continued_native_trajectory"
	RoleSessionExport         = "native_session_export"
	RoleAgentLogs             = "agent_logs"

	FormatPlan                  = "sandbox-playback/plan-v1"
	FormatEvents                = "sandbox-playback/events-v1"
	FormatSummary               = "sandbox-playback/summary-v1"
	FormatObservationComparison = "sandbox-playback/comparison-v1"
	FormatNextAction            = "sandbox-playback/next-action-v2"
	FormatLogDirectory          = "sandbox-playback/log-directory-v1"
	FormatOpenCodeExport        = "opencode/session-export-v1"

	// OpenCodeExportFile is where an OpenCode session export goes.
	OpenCodeExportFile = "opencode-session.json"
)

// nativeStage is which native file of a run: the prefix as recorded, the
// prefix rebuilt with fresh observations, or the continued session.
type nativeStage int

const (
	nativePrepared nativeStage = iota
	nativeReconstructed
	nativeContinued
)

// nativeLayout is how pVisor names one agent's native files.
type nativeLayout struct {
	label string    // the agent's name in format strings
	names [3]string // file names by stage, without extension
}

var nativeLayouts = map[string]nativeLayout{
	trajectory.ClaudeCode: {"claude-code", [3]string{"prepared-prefix", "reconstructed-prefix", "continued-session"}},
	trajectory.Codex:      {"codex", [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
	trajectory.OpenCode:   {"opencode", [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
	trajectory.Pi:         {"pi-agent", [3]string{"prepared-prefix", "reconstructed-events", "continued-events"}},
	trajectory.OpenHands:  {"openhands", [3]string{"prepared-replay-events", "reconstructed-trajectory", "continued-trajectory"}},
	trajectory.MiniSWE:    {"mini-swe-agent", [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
}

// NativeFile returns the file name (under native/) and the format string
// of one native file of agent, whose content has extension ext and the
// trajectory's sub-format, written by agent version ("" when unknown: the
// format then carries no version rather than a made-up one).
//
// Two cases differ from the plain "<agent>/native-<kind>-<version>":
// OpenCode JSON documents are session exports (what `opencode import`
// loads), named and typed as pVisor's export; a Pi session file is typed
// native-session-jsonl, since pVisor's native-events-jsonl would tell a
// reader to parse it as a --mode json stream, which it is not.
func NativeFile(agent, subFormat, ext string, stage nativeStage, version string) (name, format string) {
	l, ok := nativeLayouts[agent]
	if !ok {
		l = nativeLayout{label: agent, names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}}
	}
	name = l.names[stage] + "." + ext
	kind := ext
	switch {
	case agent == trajectory.OpenCode && ext == "json":
		if stage == nativeReconstructed {
			name = OpenCodeExportFile
		}
		return name, FormatOpenCodeExport
	case agent == trajectory.OpenCode:
		kind = "events-jsonl"
	case agent == trajectory.Pi && subFormat == pi.SubFormatEvents:
		kind = "events-jsonl"
	case agent == trajectory.Pi:
		kind = "session-jsonl"
	}
	format = l.label + "/native-" + kind
	if version != "" {
		format += "-" + version
	}
	return name, format
}

// nativeArtifact writes data as the run's native file of stage and lists
// it under its role (and, for an OpenCode export, as the session export).
func (r *run) nativeArtifact(stage nativeStage, ext string, data []byte) (string, error) {
	p := r.plan
	name, format := NativeFile(p.Format.Agent(), p.Trajectory.Format, ext, stage, r.agentVersion())
	dir := filepath.Join(r.outputDir, "native")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := result.WriteFile(path, data); err != nil {
		return "", err
	}
	role := [3]string{RolePreparedPrefix, RoleReconstructed, RoleContinued}[stage]
	r.artifact(role, format, path)
	if format == FormatOpenCodeExport && stage == nativeReconstructed {
		r.artifact(RoleSessionExport, format, path)
	}
	return path, nil
}

// agentVersion is the version format strings carry: the probed CLI's
// when a continuation probed it, else the one the trajectory records.
func (r *run) agentVersion() string {
	if v := r.res.Agent.Version; v != nil && *v != "" {
		return *v
	}
	if r.plan != nil {
		return r.plan.Trajectory.Version
	}
	return ""
}

// addLogsArtifact lists the logs directory once, as pVisor does, when the
// run wrote any log.
func (r *run) addLogsArtifact() {
	dir := filepath.Join(r.outputDir, "logs")
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		r.artifact(RoleAgentLogs, FormatLogDirectory, dir)
	}
}
