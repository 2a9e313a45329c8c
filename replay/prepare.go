package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// buildPrefix makes the native prefix in memory before the run has its
// directories: a trajectory the agent's format cannot cut there (an
// OpenHands replay that does not start with the user's task) fails as every
// other trajectory error does, with pVisor's reduced object.
func (r *run) buildPrefix() error {
	p := r.plan
	src, err := p.Source()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := p.Format.WritePrefix(&buf, src, p.SourceSize, p.Trajectory, r.req.AfterStep); err != nil {
		return decodeFailure(r.req.Trajectory, err)
	}
	r.prefix, err = r.inlineAssets(buf.Bytes())
	if err != nil {
		return err
	}
	return nil
}

// writePlan writes the manifest and the native prefix; it runs nothing.
func (r *run) writePlan() error {
	p := r.plan
	manifest := filepath.Join(r.outputDir, "manifest.json")
	if err := result.WriteJSON(manifest, p.Manifest); err != nil {
		return fail(result.WorkspaceError, "manifest: %v", err)
	}
	r.artifact(RolePlan, FormatPlan, manifest)

	if _, err := r.nativeArtifact(nativePrepared, trajectory.PrefixExt(p.Format, p.Trajectory), r.prefix); err != nil {
		return fail(result.WorkspaceError, "prepared prefix: %v", err)
	}
	prefix := r.prefix
	r.prefix = nil // written: the run does not need it in memory any more
	if r.req.Mode == PrepareOnly {
		// pVisor journals the prepared prefix as session_rebuilt with
		// prepared_only; a replay journals session_rebuilt once, when the
		// session holds the fresh observations.
		sum := sha256.Sum256(prefix)
		if err := r.journal.Append(result.EventSessionRebuilt, map[string]any{"prepared_only": true, "sha256": hex.EncodeToString(sum[:])}); err != nil {
			return journalErr(err)
		}
	}

	r.res.Metadata["replay_only_execution"] = r.req.Mode == ReplayOnly
	if sid := p.Trajectory.SessionID; sid != "" {
		r.res.Metadata["native_session_id"] = sid
	}
	if tt := p.Trajectory.TornTail; tt != nil {
		r.res.Metadata["torn_tail"] = map[string]any{"line": tt.Line, "offset": tt.Offset, "bytes": tt.Bytes}
	}
	if len(p.Stale) > 0 {
		var stale []map[string]any
		for _, s := range p.Stale {
			stale = append(stale, map[string]any{"step": s.Step, "call_id": s.Call.ID, "tool": s.Call.Name, "reason": s.Reason})
		}
		r.res.Metadata["stale_observations"] = stale
	}
	return nil
}
