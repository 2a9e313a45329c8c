package resume

import (
	"context"
	"fmt"
	"sync"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/result"
)

// compactionWatch forwards every request unchanged (a resume checks no
// request against the session) and notes the first one in which the CLI
// handed the model a summary of its history instead of the history
// (launch.Resume.Compacted): from there on the agent no longer works from
// the session it was resumed with.
type compactionWatch struct {
	compacted func(body []byte) bool

	mu    sync.Mutex
	n     int // requests seen
	first int // 1-based request that carried the summary; 0 none
}

func (w *compactionWatch) Check(_ context.Context, req *bridge.Request) ([]byte, error) {
	if w.compacted == nil {
		return req.Body, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.first == 0 && w.compacted(req.Body) {
		w.first = w.n
	}
	return req.Body, nil
}

// record puts a compaction on the run: metadata.session.compacted, a
// quality reason (the result is degraded, never verified) and a warning.
func (w *compactionWatch) record(r *sessionRun) {
	w.mu.Lock()
	first := w.first
	w.mu.Unlock()
	if first == 0 {
		return
	}
	agent := r.store.Agent()
	why := fmt.Sprintf("%s compacted its history at model request %d: it sent a summary instead of the resumed session (its auto-compaction, once the model's token count passed its limit), so what it did after that did not see the recorded conversation; use a shorter prompt or a model with a larger context window", agent, first)
	r.meta["compacted"] = map[string]any{"request": first, "reason": why}
	reasons, _ := r.res.Metadata["quality_reasons"].([]string)
	r.res.Metadata["quality_reasons"] = append(reasons, why)
	r.res.Quality = result.QualityDegraded
	r.warn(why)
}
