package pi

import (
	"bytes"
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
// answered the tool results directly. Any other occurrence of the nonce is
// an error.
func cleanSession(data []byte, nonce string, prefixLines int) ([]byte, []map[string]any, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	n, k := 0, -1
	var nonceID, nonceParent string
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		if n <= prefixLines {
			continue
		}
		rec := gjson.ParseBytes(line)
		if rec.Get("type").Str == "message" && rec.Get("message.role").Str == "user" && nonceContent(rec.Get("message.content"), nonce) {
			if k >= 0 {
				return nil, nil, fmt.Errorf("lines %d and %d both hold the resume nonce", k+1, i+1)
			}
			k, nonceID, nonceParent = i, rec.Get("id").Str, rec.Get("parentId").Str
		}
	}
	if k < 0 {
		return nil, nil, fmt.Errorf("no resume nonce message after the staged prefix: pi did not resume this session with it")
	}
	var out bytes.Buffer
	relinked := 0
	for i, line := range lines {
		if i == k {
			continue
		}
		if nonceID != "" && gjson.GetBytes(line, "parentId").Str == nonceID {
			nl := bytes.HasSuffix(line, []byte("\n"))
			line = launch.SetString(bytes.TrimRight(line, "\n"), "parentId", nonceParent)
			if nl {
				line = append(line, '\n')
			}
			relinked++
		}
		out.Write(line)
	}
	if bytes.Contains(out.Bytes(), []byte(nonce)) {
		return nil, nil, fmt.Errorf("the resume nonce is still in the cleaned session, in records this version of pvisor does not know")
	}
	return out.Bytes(), []map[string]any{{"line": k + 1, "entry": nonceID, "record": "user message (resume nonce)", "relinked_children": relinked}}, nil
}

func nonceContent(c gjson.Result, nonce string) bool {
	if c.Type == gjson.String {
		return c.Str == nonce
	}
	parts := c.Array()
	return len(parts) == 1 && parts[0].Get("type").Str == "text" && parts[0].Get("text").Str == nonce
}
