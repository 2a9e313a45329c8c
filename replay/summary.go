package replay

import (
	"path/filepath"

	"github.com/pvisor/pvisor/result"
)

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
