package opencode

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// Collect exports the continued session from OpenCode's database and removes
// the resume envelope from it.
func (s *staged) Collect() (*launch.Collected, error) {
	out, how, err := s.exportSession()
	if err != nil {
		return nil, err
	}
	i := bytes.IndexByte(out, '{')
	if i < 0 || !gjson.ValidBytes(out[i:]) {
		return nil, fmt.Errorf("opencode export %s printed no JSON document: %s", s.sid, clipOut(out))
	}
	doc := out[i:]
	if id := gjson.GetBytes(doc, "info.id").Str; id != s.sid {
		return nil, fmt.Errorf("opencode export printed session %q, not the resumed %s", id, s.sid)
	}
	clean, removed, err := cleanExport(doc, s.c.Envelope.Nonce)
	if err != nil {
		return nil, err
	}
	c := &launch.Collected{Session: clean, Metadata: map[string]any{"removed_records": removed,
		"relocated": s.c.Paths.From + " -> " + s.c.Paths.To, "staged_messages": s.stagedMsgs,
		"staging": s.staging, "collecting": how}}
	if s.conv.Report().BudgetExceeded {
		c.ResultMetadata = map[string]any{"opencode_step_budget": map[string]any{
			"enforced_by": "pvisor_bridge_watchdog",
			"reason":      "opencode does not enforce its agent step limit reliably on resumed sessions; the bridge holds the request past the budget and opencode is stopped with SIGINT",
			"max_steps":   s.c.Envelope.MaxLiveTurns,
		}}
	}
	return c, nil
}

// exportSession reads the continued session from the database as `opencode
// export` prints it; when pvisor cannot read it (another schema), the CLI
// exports it and how says why.
func (s *staged) exportSession() (out []byte, how map[string]any, err error) {
	out, err = readDB(filepath.Join(s.c.Home, ".local", "share", "opencode"), s.sid)
	if err == nil {
		return out, map[string]any{"method": "direct"}, nil
	}
	if tooLarge(err) {
		return nil, nil, err
	}
	how = map[string]any{"method": "export", "reason": err.Error()}
	out, _, err = s.tool("export", s.sid)
	return out, how, err
}

// cleanExport removes the user message whose only text part is the nonce
// (bare or quoted), with its parts, and points the messages that answered
// it at the user message before it (the original prompt), as the session
// was before the resume. Every other byte stays as exported. Any other
// occurrence of the nonce is an error.
func cleanExport(doc []byte, nonce string) ([]byte, []map[string]any, error) {
	msgs := gjson.GetBytes(doc, "messages")
	if !msgs.IsArray() {
		return nil, nil, fmt.Errorf("the export has no messages array")
	}
	items := msgs.Array()
	k, lastUser := -1, ""
	for i, m := range items {
		if m.Get("info.role").Str != "user" {
			continue
		}
		if isNonceMessage(m, nonce) {
			if k >= 0 {
				return nil, nil, fmt.Errorf("messages %d and %d both hold the resume nonce", k, i)
			}
			k = i
			continue
		}
		if k < 0 {
			lastUser = m.Get("info.id").Str
		}
	}
	if k < 0 {
		return nil, nil, fmt.Errorf("no resume nonce message in the continued session: opencode did not resume it with the nonce")
	}
	nonceID := items[k].Get("info.id").Str
	removed := []map[string]any{{"message": nonceID, "index": k, "parts": len(items[k].Get("parts").Array())}}
	relinked := 0
	kept := make([]string, 0, len(items))
	for i, m := range items {
		if i == k {
			continue
		}
		raw := []byte(m.Raw)
		if m.Get("info.parentID").Str == nonceID {
			raw = launch.SetString(raw, "info.parentID", lastUser)
			relinked++
		}
		kept = append(kept, string(raw))
	}
	if relinked > 0 && lastUser == "" {
		return nil, nil, fmt.Errorf("the nonce message %s has no user message before it to re-link its %d answer(s) to", nonceID, relinked)
	}
	removed[0]["relinked_messages"] = relinked
	out, err := replaceValue(doc, msgs, "["+strings.Join(kept, ",")+"]")
	if err != nil {
		return nil, nil, err
	}
	if bytes.Contains(out, []byte(nonce)) {
		return nil, nil, fmt.Errorf("the resume nonce is still in the cleaned export, in records this version of pvisor does not know")
	}
	return out, removed, nil
}

func isNonceMessage(m gjson.Result, nonce string) bool {
	var texts []string
	for _, p := range m.Get("parts").Array() {
		if p.Get("type").Str == "text" {
			texts = append(texts, p.Get("text").Str)
		}
	}
	return len(texts) == 1 && (texts[0] == nonce || texts[0] == `"`+nonce+`"`)
}

// replaceValue replaces the bytes of v (a value inside doc) with repl.
func replaceValue(doc []byte, v gjson.Result, repl string) ([]byte, error) {
	start, end := v.Index, v.Index+len(v.Raw)
	if v.Index <= 0 || end > len(doc) || string(doc[start:end]) != v.Raw {
		return nil, fmt.Errorf("cannot locate the messages array in the export")
	}
	out := make([]byte, 0, len(doc))
	out = append(out, doc[:start]...)
	out = append(out, repl...)
	return append(out, doc[end:]...), nil
}
