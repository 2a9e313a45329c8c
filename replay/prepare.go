package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// buildPrefix makes the native prefix before the run has its directories:
// a trajectory the agent's format cannot cut there (an OpenHands replay
// that does not start with the user's task) fails as every other
// trajectory error does, with pVisor's reduced object. A prefix up to
// prefixInMemory bytes is kept for writePlan; a larger one (a late step of
// a large session) is only hashed here and written again, streamed from
// the source, once the output dir exists, so memory does not grow with it.
func (r *run) buildPrefix() error {
	p := r.plan
	src, err := p.Source()
	if err != nil {
		return err
	}
	limit := prefixInMemory
	if r.req.TrajectoryAssets != "" {
		limit = -1 // InlineAssets edits the whole prefix (one SWE-agent JSON document)
	}
	sp := newPrefixSpool(limit)
	if err := p.Format.WritePrefix(sp, src, p.SourceSize, p.Trajectory, r.req.AfterStep); err != nil {
		return decodeFailure(r.req.Trajectory, err)
	}
	r.prefixSum, r.prefixLen = sp.sum(), sp.n
	if sp.spilled {
		return nil
	}
	r.prefix, err = r.inlineAssets(sp.buf)
	if err != nil {
		return err
	}
	if r.req.TrajectoryAssets != "" {
		h := sha256.Sum256(r.prefix)
		r.prefixSum, r.prefixLen = h, int64(len(r.prefix))
	}
	return nil
}

// prefixInMemory is the largest prepared prefix buildPrefix keeps for
// writePlan; a larger one is written twice rather than held.
var prefixInMemory = 1 << 20 // a variable for the tests

// prefixSpool hashes and counts what WritePrefix writes and keeps it while
// it fits under limit (no limit when negative).
type prefixSpool struct {
	h       hash.Hash
	buf     []byte
	n       int64
	limit   int
	spilled bool
}

func newPrefixSpool(limit int) *prefixSpool { return &prefixSpool{h: sha256.New(), limit: limit} }

func (s *prefixSpool) Write(p []byte) (int, error) {
	s.h.Write(p)
	s.n += int64(len(p))
	switch {
	case s.spilled:
	case s.limit < 0 || len(s.buf)+len(p) <= s.limit:
		s.buf = append(s.buf, p...)
	default:
		s.spilled, s.buf = true, nil
	}
	return len(p), nil
}

func (s *prefixSpool) sum() (h [sha256.Size]byte) {
	s.h.Sum(h[:0])
	return h
}

// writePrefix writes the prepared prefix to the native file: what
// buildPrefix kept, or the prefix made again from the source, which must
// come out as it did the first time.
func (r *run) writePrefix() error {
	p := r.plan
	ext := trajectory.PrefixExt(p.Format, p.Trajectory)
	if r.prefix != nil || r.prefixLen == 0 {
		_, err := r.nativeArtifact(nativePrepared, ext, r.prefix)
		r.prefix = nil // written: the run does not need it in memory any more
		return err
	}
	src, err := p.Source()
	if err != nil {
		return err
	}
	sp := newPrefixSpool(0)
	_, err = r.nativeArtifactStream(nativePrepared, ext, func(w io.Writer) error {
		if err := p.Format.WritePrefix(io.MultiWriter(w, sp), src, p.SourceSize, p.Trajectory, r.req.AfterStep); err != nil {
			return err
		}
		if sp.n != r.prefixLen || sp.sum() != r.prefixSum {
			return fail(result.TrajectoryError, "trajectory %s: the prefix came out different the second time (%d bytes, then %d): it was changed while pvisor read it; leave it alone until pvisor ends (or replay a copy)", r.req.Trajectory, r.prefixLen, sp.n)
		}
		return nil
	})
	return err
}

// writePlan writes the manifest and the native prefix; it runs nothing.
func (r *run) writePlan() error {
	p := r.plan
	manifest := filepath.Join(r.outputDir, "manifest.json")
	if err := writeManifest(manifest, &p.Manifest); err != nil {
		return fail(result.WorkspaceError, "manifest: %v", err)
	}
	r.artifact(RolePlan, FormatPlan, manifest)

	if err := r.writePrefix(); err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return f // the trajectory's fault (changed meanwhile), not the output dir's
		}
		return fail(result.WorkspaceError, "prepared prefix: %v", err)
	}
	if r.req.Mode == PrepareOnly {
		// pVisor journals the prepared prefix as session_rebuilt with
		// prepared_only; a replay journals session_rebuilt once, when the
		// session holds the fresh observations.
		if err := r.journal.Append(result.EventSessionRebuilt, map[string]any{"prepared_only": true, "sha256": hex.EncodeToString(r.prefixSum[:])}); err != nil {
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
