package copilot

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// Collect reads the events.jsonl Copilot continued and removes the resume
// envelope from it.
func (s *staged) Collect() (*launch.Collected, error) {
	path := filepath.Join(s.dir, "events.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if id := gjson.GetBytes(launch.FirstLine(data), "data.sessionId").Str; id != s.sid {
		return nil, fmt.Errorf("%s belongs to session %q, not the resumed %s", path, id, s.sid)
	}
	clean, removed, err := CleanSession(data, s.c.Envelope.Nonce, s.lines)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &launch.Collected{Session: clean, Metadata: map[string]any{"removed_records": removed, "staged_lines": s.lines}}, nil
}

// CleanSession removes the user.message whose prompt is the nonce (written
// after the first prefixLines lines) and relinks its children to its parent.
// The session.resume event stays: it is what happened.
func CleanSession(data []byte, nonce string, prefixLines int) ([]byte, []map[string]any, error) {
	clean, u, err := launch.RemoveLinked(data, nonce, prefixLines, func(rec gjson.Result) bool {
		return rec.Get("type").Str == "user.message" && rec.Get("data.content").Str == nonce
	})
	if err != nil {
		return nil, nil, err
	}
	return clean, []map[string]any{{"line": u.Line, "event": u.ID, "record": "user.message (resume nonce)", "relinked_children": u.Relinked}}, nil
}
