package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

const e2eSession = "2026-11-29T23-16-33-212Z_01a22998-8d3b-75d5-8d8d-f6601805e7d0.jsonl"

// TestProjectMatchesRecordedRequests: every request the real CLI sent while
// recording the session is, after its system message, a prefix of the
// session's projection, byte for byte.
func TestProjectMatchesRecordedRequests(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "e2e", "sessions", "pi@0.73.1")
	f, err := os.Open(filepath.Join(dir, e2eSession))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Project(f)
	if err != nil {
		t.Fatal(err)
	}
	if p.SessionID != "01a22998-8d3b-75d5-8d8d-f6601805e7d0" || p.Cwd != "/tmp/pvisor-e2e/pi/repo" || p.LastID != "f7ddca8f" {
		t.Errorf("header %+v", p)
	}
	items := chattest.RawStrings(p.Items)
	reqs := chattest.SessionMessages(t, dir)
	if len(reqs) != 6 {
		t.Fatalf("%d recorded requests", len(reqs))
	}
	for i, msgs := range reqs {
		if len(msgs) > len(items) {
			t.Fatalf("request %d has %d messages, the projection %d", i, len(msgs), len(items))
		}
		if d := cmp.Diff(msgs, items[:len(msgs)]); d != "" {
			t.Errorf("request %d (-recorded +projection):\n%s", i, d)
		}
	}
}

func TestProjectFollowsActiveBranch(t *testing.T) {
	doc := `{"type":"session","version":3,"id":"s","cwd":"/r"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"old"}]}}
{"type":"message","id":"c","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls <x>"}}]}}
{"type":"message","id":"d","parentId":"c","message":{"role":"toolResult","toolCallId":"t1","content":[{"type":"text","text":"x"}]}}
`
	p, err := Project(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls <x>\"}"}}]}`,
		`{"role":"tool","content":"x","tool_call_id":"t1"}`,
	}
	if d := cmp.Diff(want, chattest.RawStrings(p.Items)); d != "" {
		t.Error(d)
	}
}

func TestProjectRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":      ``,
		"v1":         `{"type":"session","version":1,"id":"s"}`,
		"orphan":     "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"zz\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n",
		"compaction": "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"compaction\",\"id\":\"b\",\"parentId\":null}\n",
		"image":      "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}}\n",
	} {
		if _, err := Project(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
