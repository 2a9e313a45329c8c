package codex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// Collect finds the rollout Codex continued (the newest file of the thread:
// Codex may rotate it) and removes the resume envelope from it.
func (s *staged) Collect() (*launch.Collected, error) {
	path, err := s.continuedRollout()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if id := gjson.GetBytes(launch.FirstLine(data), "payload.id").String(); id != s.sid {
		return nil, fmt.Errorf("%s belongs to session %q, not the resumed %s", path, id, s.sid)
	}
	clean, removed, ctxItems, err := cleanRollout(data, s.c.Envelope.Nonce, s.lines)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	meta := map[string]any{"staging": s.meta, "removed_records": removed}
	if len(ctxItems) > 0 {
		meta["inserted_context_items"] = ctxItems
	}
	return &launch.Collected{Session: clean, Metadata: meta}, nil
}

func (s *staged) continuedRollout() (string, error) {
	var best string
	var bestMod int64
	err := filepath.WalkDir(filepath.Join(s.c.Home, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), "-"+s.sid+".jsonl") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if m := info.ModTime().UnixNano(); best == "" || m > bestMod {
			best, bestMod = p, m
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("looking for the continued rollout: %w", err)
	}
	if best == "" {
		return "", fmt.Errorf("no rollout of session %s under %s", s.sid, filepath.Join(s.c.Home, "sessions"))
	}
	return best, nil
}

// cleanRollout removes the records the resume wrote for the nonce: its
// response_item user message, and the events that echo it (item_completed
// UserMessage in 0.17x, user_message in older CLIs). The turn scaffolding
// around it (task_started, turn_context, …) stays: Codex resumes the cleaned
// file, and a later resume re-sends no nonce. Context items Codex inserted
// after the staged prefix (the first prefixLines lines) are kept and listed.
// Any other occurrence of the nonce is an error: a record this cleaner does
// not know would carry the transport prompt into the session.
func cleanRollout(data []byte, nonce string, prefixLines int) (clean []byte, removed, ctxItems []map[string]any, err error) {
	var out bytes.Buffer
	n, seenNonce := 0, false
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		typ, pl := gjson.GetBytes(line, "type").String(), gjson.GetBytes(line, "payload")
		switch {
		case n <= prefixLines:
		case typ == "response_item" && nonceMessage(pl, nonce):
			removed = append(removed, map[string]any{"line": n, "record": "response_item user message (resume nonce)"})
			seenNonce = true
			continue
		case typ == "event_msg" && nonceEvent(pl, nonce):
			removed = append(removed, map[string]any{"line": n, "record": "event_msg " + pl.Get("type").String() + " (resume nonce)"})
			continue
		case typ == "response_item" && !seenNonce && pl.Get("type").String() == "message":
			text := pl.Get("content.#.text").String()
			sum := sha256.Sum256([]byte(text))
			ctxItems = append(ctxItems, map[string]any{"line": n, "role": pl.Get("role").String(),
				"length": len(text), "sha256": hex.EncodeToString(sum[:])})
		}
		out.Write(line)
	}
	if !seenNonce {
		return nil, nil, nil, fmt.Errorf("no resume nonce message after the staged prefix: the CLI did not resume this session with it")
	}
	if bytes.Contains(out.Bytes(), []byte(nonce)) {
		var lines []int
		for i, l := range bytes.Split(out.Bytes(), []byte("\n")) {
			if bytes.Contains(l, []byte(nonce)) {
				lines = append(lines, i+1)
			}
		}
		return nil, nil, nil, fmt.Errorf("the resume nonce is still on line(s) %v of the cleaned rollout, in records this version of pvisor does not know", lines)
	}
	return out.Bytes(), removed, ctxItems, nil
}

// nonceMessage: the stored user message whose only text is the nonce.
func nonceMessage(pl gjson.Result, nonce string) bool {
	if pl.Get("type").String() != "message" || pl.Get("role").String() != "user" {
		return false
	}
	c := pl.Get("content")
	if c.Type == gjson.String {
		return c.String() == nonce
	}
	parts := c.Array()
	return len(parts) == 1 && parts[0].Get("text").String() == nonce
}

// nonceEvent: an event whose only user text is the nonce.
func nonceEvent(pl gjson.Result, nonce string) bool {
	switch pl.Get("type").String() {
	case "user_message":
		return pl.Get("message").String() == nonce
	case "item_completed", "item_started":
		it := pl.Get("item")
		if it.Get("type").String() != "UserMessage" {
			return false
		}
		parts := it.Get("content").Array()
		return len(parts) == 1 && parts[0].Get("text").String() == nonce
	}
	return false
}
