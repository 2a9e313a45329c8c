package resume

import (
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// sessionActions decodes a session file with the agent's own format and
// counts its model responses (-1 and the error when it does not decode).
func sessionActions(agent, path string) (int, error) {
	format, ok := agents.Lookup(agent)
	if !ok {
		return -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	t, err := format.Decode(f, trajectory.Options{SkipObservationContent: true})
	if err != nil {
		return -1, err
	}
	return len(t.Actions), nil
}

// countContinued sets continued_steps: the model responses the captured
// session holds past the before the restored one held. A session that
// does not decode is reported in metadata.session, as a replay's
// continued_session_decode_error.
func (r *sessionRun) countContinued(before int, bundle string, m *capture.Manifest) {
	if before < 0 {
		return
	}
	for _, f := range m.Files {
		if f.Role != "main" {
			continue
		}
		after, err := sessionActions(r.store.Agent(), filepath.Join(bundle, capture.FilesDir, filepath.FromSlash(f.Path)))
		switch {
		case err != nil:
			r.meta["continued_session_decode_error"] = err.Error()
		case after > before:
			r.res.ContinuedSteps = after - before
		}
		return
	}
}
