package claude

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// Collect reads the session Claude Code continued and removes every record
// the resume envelope added.
func (s *staged) Collect() (*launch.Collected, error) {
	path, data, err := s.continuedSession()
	if err != nil {
		return nil, err
	}
	clean, removed, err := cleanSession(data, s.c.Envelope.Nonce, ResumeMarker(s.c.Envelope.Nonce), s.lines)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &launch.Collected{Session: clean, Metadata: map[string]any{"staging": s.meta, "removed_records": removed}}, nil
}

// continuedSession is the staged file, or, should the CLI have keyed the
// project differently (a symlinked workspace), the session file of the same
// id under another project directory that holds the nonce.
func (s *staged) continuedSession() (string, []byte, error) {
	nonce := []byte(s.c.Envelope.Nonce)
	data, err := os.ReadFile(s.path)
	if err == nil && bytes.Contains(data, nonce) {
		return s.path, data, nil
	}
	others, _ := filepath.Glob(filepath.Join(s.config, "projects", "*", s.sid+".jsonl"))
	for _, p := range others {
		if p == s.path {
			continue
		}
		if d, err := os.ReadFile(p); err == nil && bytes.Contains(d, nonce) {
			return p, d, nil
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("the continued session: %w", err)
	}
	return s.path, data, nil // cleanSession says what is missing
}

// cleanSession removes what a print-mode resume with the nonce wrote
// after the staged prefix (its first prefixLines lines):
//
//	queue-operation enqueue (content = nonce) and the dequeue after it
//	user, isMeta: the resume marker              parent = the boundary leaf
//	assistant <synthetic> "No response requested."  parent = the marker
//	user: the nonce                              parent = the synthetic answer
//	last-prompt records naming the nonce
//	api-request-blob records holding the nonce (2.1.332 logs each request's
//	messages by hash for its own replay; the loader ignores them), and the
//	api-request records built on a removed blob or on a removed request
//
// and links the records that hung off the removed ones (the first live
// answer) to the boundary leaf. Anything else that still holds the nonce or
// the marker is an error: a record this cleaner does not know would carry
// the transport prompt into the session.
func cleanSession(data []byte, nonce, marker string, prefixLines int) ([]byte, []map[string]any, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 0 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < prefixLines {
		return nil, nil, fmt.Errorf("the session has %d lines, fewer than the %d staged: the CLI rewrote it", len(lines), prefixLines)
	}
	drop := map[int]string{}
	droppedBlobs, droppedRequests := map[string]bool{}, map[string]bool{}
	var markerUUID, answerUUID, nonceUUID, leaf string
	for i := prefixLines; i < len(lines); i++ {
		v := gjson.ParseBytes(lines[i])
		typ, parent := v.Get("type").Str, v.Get("parentUuid").Str
		text := storedText(v.Get("message.content"))
		switch {
		case typ == "queue-operation" && v.Get("operation").Str == "enqueue" && v.Get("content").Str == nonce:
			drop[i] = "queue-operation enqueue (resume nonce)"
			if i+1 < len(lines) && gjson.GetBytes(lines[i+1], "type").Str == "queue-operation" &&
				gjson.GetBytes(lines[i+1], "operation").Str == "dequeue" {
				drop[i+1] = "queue-operation dequeue (resume nonce)"
			}
		case typ == "user" && markerUUID == "" && v.Get("isMeta").Bool() && text == marker:
			drop[i], markerUUID, leaf = "user isMeta resume prompt (marker)", v.Get("uuid").Str, parent
		case typ == "assistant" && answerUUID == "" && v.Get("message.model").Str == "<synthetic>" && text == "No response requested." &&
			(parent == markerUUID || markerUUID == ""):
			drop[i], answerUUID = "assistant <synthetic> No response requested.", v.Get("uuid").Str
			if markerUUID == "" {
				leaf = parent // boundary tools that get no resume prompt
			}
		case typ == "user" && nonceUUID == "" && answerUUID != "" && parent == answerUUID && text == nonce:
			drop[i], nonceUUID = "user resume nonce", v.Get("uuid").Str
		case typ == "last-prompt" && v.Get("lastPrompt").Str == nonce:
			drop[i] = "last-prompt (resume nonce)"
		case typ == "api-request-blob" && (bytes.Contains(lines[i], []byte(nonce)) || bytes.Contains(lines[i], []byte(marker))):
			drop[i] = "api-request-blob (resume envelope)"
			droppedBlobs[v.Get("hash").Str] = true
		case typ == "api-request" && (droppedRequests[v.Get("base").Str] || slices.ContainsFunc(v.Get("tail").Array(), func(h gjson.Result) bool { return droppedBlobs[h.Str] })):
			drop[i] = "api-request (built on a removed record)"
			droppedRequests[v.Get("id").Str] = true
		}
	}
	if nonceUUID == "" {
		return nil, nil, fmt.Errorf("no resume nonce record after the staged prefix: the CLI did not resume this session with it")
	}
	removedUUID := map[string]bool{markerUUID: markerUUID != "", answerUUID: true, nonceUUID: true}
	var out bytes.Buffer
	var removed []map[string]any
	left := map[string][]int{} // what still holds the nonce or marker: line numbers of the CLI's file
	for i, line := range lines {
		if what, ok := drop[i]; ok {
			removed = append(removed, map[string]any{"line": i + 1, "record": what})
			continue
		}
		if i >= prefixLines && removedUUID[gjson.GetBytes(line, "parentUuid").Str] {
			line = launch.SetString(line, "parentUuid", leaf)
		}
		for what, v := range map[string]string{"resume nonce": nonce, "resume marker": marker} {
			if bytes.Contains(line, []byte(v)) {
				left[what] = append(left[what], i+1)
			}
		}
		out.Write(line)
	}
	for _, what := range []string{"resume nonce", "resume marker"} {
		if at := left[what]; len(at) > 0 {
			return nil, nil, fmt.Errorf("the %s is still on line(s) %v of the continued session, in records this version of pvisor does not know", what, at)
		}
	}
	return out.Bytes(), removed, nil
}

// storedText is the text of stored content that is a string or exactly
// one text block; "" otherwise.
func storedText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	if a := c.Array(); len(a) == 1 && a[0].Get("type").Str == "text" {
		return a[0].Get("text").Str
	}
	return ""
}
