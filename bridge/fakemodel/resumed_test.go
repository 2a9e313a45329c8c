package fakemodel

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// anthropicTurns is a Messages request whose conversation holds n assistant
// turns and ends with a user turn.
func anthropicTurns(n int) string {
	msgs := []string{`{"role":"user","content":"go"}`}
	for i := 0; i < n; i++ {
		msgs = append(msgs, `{"role":"assistant","content":"x"}`, `{"role":"user","content":"more"}`)
	}
	return `{"tools":[{"name":"Bash"}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

// A session resumed after 6 recorded turns gets the script from its start;
// past the end the final text is served and the log says the script ran out.
func TestResumedSessionStartsTheScript(t *testing.T) {
	var warnings bytes.Buffer
	s := New(Script{Replies: []Reply{{ToolCalls: []ToolCall{{Name: "Bash"}}}, {Text: "second"}}}, WithWarnings(&warnings))
	for i, tc := range []struct {
		turns     int
		kind      string
		reply     int
		exhausted bool
		status    int
	}{
		{6, KindMain, 0, false, 200},
		{6, KindMain, 0, false, 200}, // a retry gets the same reply
		{7, KindMain, 1, false, 200},
		{8, KindFinal, -1, true, 200},
		{3, KindInvalid, -1, false, 400}, // fewer turns than the resumed session began with
	} {
		res, body := do(t, s, http.MethodPost, "/v1/messages", anthropicTurns(tc.turns))
		got := last(s)
		if res.StatusCode != tc.status || got.Kind != tc.kind || got.Reply != tc.reply || got.ScriptExhausted != tc.exhausted {
			t.Errorf("request %d (%d turns): status %d kind %s reply %d exhausted %v, want %d %s %d %v\n%s",
				i, tc.turns, res.StatusCode, got.Kind, got.Reply, got.ScriptExhausted, tc.status, tc.kind, tc.reply, tc.exhausted, body)
		}
	}
	if n := strings.Count(warnings.String(), "script exhausted"); n != 1 || !strings.Contains(warnings.String(), "8 assistant turns") {
		t.Errorf("warnings %q, want one for the 8-turn request", warnings.String())
	}
	// A side call first does not fix the base.
	s = New(Script{Replies: []Reply{{Text: "first"}}})
	do(t, s, http.MethodPost, "/v1/messages", `{"messages":[{"role":"user","content":"title?"}]}`)
	_, body := do(t, s, http.MethodPost, "/v1/messages", anthropicTurns(4))
	if text := gjson.GetBytes(body, "content.0.text").Str; text != "first" || last(s).Reply != 0 {
		t.Errorf("after a side call, 4 turns got %q (reply %d), want reply 0", text, last(s).Reply)
	}
}

// Two servers never make the same ids (a second one serving a session the
// first one wrote would repeat its message and call ids); one server
// answers a retry with the same ones.
func TestIDsAreUniquePerServer(t *testing.T) {
	script := Script{Replies: []Reply{{ToolCalls: []ToolCall{{Name: "Bash"}}}}}
	ids := func(s *Server) []string {
		_, body := do(t, s, http.MethodPost, "/v1/messages", anthropicTurns(0))
		return []string{gjson.GetBytes(body, "id").Str, gjson.GetBytes(body, "content.0.id").Str}
	}
	a, b := New(script), New(script)
	first, retry, other := ids(a), ids(a), ids(b)
	for i := range first {
		if first[i] == "" || first[i] == other[i] {
			t.Errorf("id %d: %q from one server, %q from another", i, first[i], other[i])
		}
	}
	if first[1] != retry[1] {
		t.Errorf("a retry got call id %q, first %q", retry[1], first[1])
	}
}
