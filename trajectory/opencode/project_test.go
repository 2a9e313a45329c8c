package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

// TestProjectMatchesRecordedRequests: every request the real CLI sent while
// recording the session is, after its system message, a prefix of the
// export's projection, byte for byte.
func TestProjectMatchesRecordedRequests(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "e2e", "sessions", "opencode@1.18.33")
	f, err := os.Open(filepath.Join(dir, "export.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Project(f)
	if err != nil {
		t.Fatal(err)
	}
	if p.SessionID != "ses_dd667972effeIl1TDXAj2ZWXpJ" {
		t.Errorf("session id %q", p.SessionID)
	}
	reqs := chattest.SessionMessages(t, dir)
	if len(reqs) == 0 {
		t.Fatal("no recorded requests")
	}
	items := chattest.RawStrings(p.Items)
	for i, msgs := range reqs {
		if len(msgs) > len(items) {
			t.Fatalf("request %d has %d messages, the projection %d", i, len(msgs), len(items))
		}
		if d := cmp.Diff(msgs, items[:len(msgs)]); d != "" {
			t.Errorf("request %d (-recorded +projection):\n%s", i, d)
		}
	}
	// The last item is the final answer, which no request carried.
	if last := items[len(items)-1]; !strings.HasPrefix(last, `{"role":"assistant","content":"Added NOTES.md`) {
		t.Errorf("last item %s", last)
	}
}

func TestProjectRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not json": `{"info":`,
		"no id":    `{"info":{},"messages":[]}`,
		"bad role": `{"info":{"id":"ses_1"},"messages":[{"info":{"role":"system"},"parts":[]}]}`,
		"running":  `{"info":{"id":"ses_1"},"messages":[{"info":{"role":"assistant"},"parts":[{"type":"tool","callID":"c","tool":"bash","state":{"status":"running"}}]}]}`,
	} {
		if _, err := Project(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestProjectShapes(t *testing.T) {
	doc := `{"info":{"id":"ses_1"},"messages":[
	 {"info":{"role":"user"},"parts":[{"type":"text","text":"a"},{"type":"text","text":"b <&>"}]},
	 {"info":{"role":"assistant"},"parts":[{"type":"step-start"},{"type":"tool","callID":"c1","tool":"bash","state":{"status":"error","input":{"command":"x"},"error":"boom"}},{"type":"step-finish"}]}]}`
	p, err := Project(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b <&>"}]}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"x\"}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"boom"}`,
	}
	if d := cmp.Diff(want, chattest.RawStrings(p.Items)); d != "" {
		t.Error(d)
	}
}
