package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// writePlan writes the manifest and the native prefix; it runs nothing.
func (r *run) writePlan() error {
	p := r.plan
	manifest := filepath.Join(r.outputDir, "manifest.json")
	if err := result.WriteJSON(manifest, p.Manifest); err != nil {
		return fail(result.WorkspaceError, "manifest: %v", err)
	}
	r.artifact(RolePlan, FormatPlan, manifest)

	src, err := p.Source()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := p.Format.WritePrefix(&buf, src, p.SourceSize, p.Trajectory, r.req.AfterStep); err != nil {
		return decodeFailure(r.req.Trajectory, err)
	}
	if _, err := r.nativeArtifact(nativePrepared, trajectory.PrefixExt(p.Format, p.Trajectory), buf.Bytes()); err != nil {
		return fail(result.WorkspaceError, "prepared prefix: %v", err)
	}
	if r.req.Mode == PrepareOnly {
		// pVisor journals the prepared prefix as session_rebuilt with
		// prepared_only; a replay journals session_rebuilt once, when the
		// session holds the fresh observations.
		sum := sha256.Sum256(buf.Bytes())
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
