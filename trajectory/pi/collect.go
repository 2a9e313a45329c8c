package pi

import (
	"fmt"
	"os"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// Collect reads the session file Pi continued and removes the resume
// envelope from it.
func (s *staged) Collect() (*launch.Collected, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	if id := gjson.GetBytes(launch.FirstLine(data), "id").Str; id != s.sid {
		return nil, fmt.Errorf("%s belongs to session %q, not the resumed %s", s.path, id, s.sid)
	}
	clean, removed, err := cleanSession(data, s.c.Envelope.Nonce, s.lines)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	return &launch.Collected{Session: clean, Metadata: map[string]any{"removed_records": removed,
		"staged_lines": s.lines, "boundary_entry": s.lastID}}, nil
}

// cleanSession removes the user message entry whose content is the nonce
// (written after the first prefixLines lines) and gives its child the
// nonce's parent, the boundary toolResult, as if the continuation had
// answered the tool results directly.
func cleanSession(data []byte, nonce string, prefixLines int) ([]byte, []map[string]any, error) {
	clean, u, err := launch.RemoveLinked(data, nonce, prefixLines, func(rec gjson.Result) bool {
		return rec.Get("type").Str == "message" && rec.Get("message.role").Str == "user" && nonceContent(rec.Get("message.content"), nonce)
	})
	if err != nil {
		return nil, nil, err
	}
	return clean, []map[string]any{{"line": u.Line, "entry": u.ID, "record": "user message (resume nonce)", "relinked_children": u.Relinked}}, nil
}

func nonceContent(c gjson.Result, nonce string) bool {
	if c.Type == gjson.String {
		return c.Str == nonce
	}
	parts := c.Array()
	return len(parts) == 1 && parts[0].Get("type").Str == "text" && parts[0].Get("text").Str == nonce
}
