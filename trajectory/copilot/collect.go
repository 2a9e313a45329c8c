package copilot

import (
	"bytes"
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
// after the first prefixLines lines) and gives the events that named it as
// parent its own parent, as if the continuation had gone on from the
// boundary directly. The session.resume event stays: it is what happened.
// Any other occurrence of the nonce is an error.
func CleanSession(data []byte, nonce string, prefixLines int) ([]byte, []map[string]any, error) {
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
		if rec.Get("type").Str == "user.message" && rec.Get("data.content").Str == nonce {
			if k >= 0 {
				return nil, nil, fmt.Errorf("lines %d and %d both hold the resume nonce", k+1, i+1)
			}
			k, nonceID, nonceParent = i, rec.Get("id").Str, rec.Get("parentId").Str
		}
	}
	if k < 0 {
		return nil, nil, fmt.Errorf("no user.message with the resume nonce after the staged prefix: copilot did not resume this session with it")
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
	return out.Bytes(), []map[string]any{{"line": k + 1, "event": nonceID, "record": "user.message (resume nonce)", "relinked_children": relinked}}, nil
}
