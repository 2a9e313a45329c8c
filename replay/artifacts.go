package replay

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
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
)

// nativeStage is which native file of a run: the prefix as recorded, the
// prefix rebuilt with fresh observations, or the continued session.
type nativeStage int

const (
	nativePrepared nativeStage = iota
	nativeReconstructed
	nativeContinued
)

// NativeFile returns the file name (under native/) and the format string
// of one native file of agent, whose content has extension ext and the
// trajectory's sub-format, written by agent version ("" when unknown: the
// format then carries no version rather than a made-up one). The names are
// the agent's (launch.NativeLayout); export documents are named and typed
// as pVisor's export.
func NativeFile(agent, subFormat, ext string, stage nativeStage, version string) (name, format string, export bool) {
	a, _ := agents.Get(agent)
	l := a.Native
	if l.Label == "" {
		l = launch.NativeLayout{Label: agent, Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}}
	}
	name = l.Names[stage] + "." + ext
	if x := l.Export; x != nil && ext == x.Ext {
		if stage == nativeReconstructed {
			name = x.File
		}
		return name, x.Format, true
	}
	kind := ext
	if l.Kind != nil {
		if k := l.Kind(subFormat, ext); k != "" {
			kind = k
		}
	}
	format = l.Label + "/native-" + kind
	if version != "" {
		format += "-" + version
	}
	return name, format, false
}

// nativeArtifact writes data as the run's native file of stage and lists
// it under its role (and, for an OpenCode export, as the session export).
func (r *run) nativeArtifact(stage nativeStage, ext string, data []byte) (string, error) {
	return r.nativeArtifactStream(stage, ext, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// nativeArtifactStream is nativeArtifact for a file written by write as a
// stream; the path holds it only when write succeeds.
func (r *run) nativeArtifactStream(stage nativeStage, ext string, write func(io.Writer) error) (string, error) {
	p := r.plan
	name, format, export := NativeFile(p.Format.Agent(), p.Trajectory.Format, ext, stage, r.agentVersion())
	dir := filepath.Join(r.outputDir, "native")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	f, err := result.CreateAtomic(path)
	if err != nil {
		return "", err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := f.Commit(); err != nil {
		return "", err
	}
	role := [3]string{RolePreparedPrefix, RoleReconstructed, RoleContinued}[stage]
	r.artifact(role, format, path)
	if export && stage == nativeReconstructed {
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

// SummarySchema is replay-summary.json's schema_version.
const SummarySchema = "sandbox-playback.summary/v1"

// Summary is replay-summary.json, written in every mode and on failure
// once the output dir exists. The fields up to BoundaryUserPrompt are
// pVisor's, with its meaning: exact_observations counts observations equal
// byte for byte (and error flag), different_observations the rest. Ours
// follow: normalized_exact_observations are those of the rest that are
// equal once run-to-run fields (a chunk id, a wall time, the workspace
// path) are masked, so different_observations minus them is what really
// diverged (really_different_observations).
type Summary struct {
	SchemaVersion         string         `json:"schema_version"`
	Agent                 string         `json:"agent"`
	AfterStep             int            `json:"after_step"`
	ReplayedToolCalls     int            `json:"replayed_tool_calls"`
	ExactObservations     int            `json:"exact_observations"`
	DifferentObservations int            `json:"different_observations"`
	ComparisonIsGating    bool           `json:"comparison_is_gating"`
	ContinuationStatus    string         `json:"continuation_status"`
	ContinuedSteps        int            `json:"continued_steps"`
	BoundaryUserPrompt    map[string]any `json:"boundary_user_prompt"`

	Mode                        string `json:"mode"`
	NormalizedExactObservations int    `json:"normalized_exact_observations"`
	ReallyDifferent             int    `json:"really_different_observations"`
	StaleToolCalls              int    `json:"stale_tool_calls"`
	ReconstructedSessionSHA256  string `json:"reconstructed_session_sha256,omitempty"`
}

// newSummary counts the observation comparisons of a replayed prefix.
func (r *run) newSummary(comps []CallComparison, rebuiltSHA string) *Summary {
	s := &Summary{ReconstructedSessionSHA256: rebuiltSHA, StaleToolCalls: len(r.plan.Stale)}
	for _, c := range comps {
		switch {
		case c.Exact:
			s.ExactObservations++
		case c.NormalizedExact != nil && *c.NormalizedExact:
			s.DifferentObservations++
			s.NormalizedExactObservations++
		default:
			s.DifferentObservations++
			s.ReallyDifferent++
		}
	}
	return s
}

// writeSummary completes the summary from the result and writes it; a
// write failure is noted on the result, as for result.json.
func (r *run) writeSummary() {
	s := r.summary
	if s == nil {
		s = &Summary{}
	}
	s.SchemaVersion = SummarySchema
	s.Agent = r.req.Agent
	if r.plan != nil {
		s.Agent = r.plan.Format.Agent()
	}
	s.AfterStep = r.req.AfterStep
	s.ReplayedToolCalls = r.res.ReplayedToolCalls
	s.ContinuationStatus = r.res.AgentStatus
	s.ContinuedSteps = r.res.ContinuedSteps
	s.BoundaryUserPrompt, _ = r.res.Metadata["boundary_user_prompt"].(map[string]any)
	s.Mode = r.req.Mode.String()
	path := filepath.Join(r.outputDir, "replay-summary.json")
	if err := result.WriteJSON(path, s); err != nil {
		r.res.Metadata["summary_write_error"] = err.Error()
		return
	}
	r.artifact(RoleSummary, FormatSummary, path)
}
