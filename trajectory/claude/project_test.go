package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
	"github.com/pvisor/pvisor/trajectory"
)

// recordedDirs are the e2e recordings of Claude Code, one per release.
func recordedDirs(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("../../testdata/e2e/sessions/claude-code@*")
	if len(dirs) == 0 {
		t.Fatal("no Claude Code recording under testdata/e2e/sessions")
	}
	return dirs
}

// recordedRequests returns the bodies of the model requests the real CLI
// sent while it recorded the e2e session in recordedDir, in order.
func recordedRequests(t *testing.T, recordedDir string) [][]byte {
	t.Helper()
	return chattest.Requests(t, recordedDir)
}

// wireCanonical is a request's messages in canonical form, without the
// runtime items the CLI renders at each launch: the reminders it prepends to
// the first message and role "system" messages.
func wireCanonical(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for i, m := range gjson.GetBytes(body, "messages").Array() {
		raw := []byte(m.Raw)
		if m.Get("role").Str == "system" {
			continue
		}
		if i == 0 {
			c := m.Get("content").Array()
			n := 0
			for n < len(c)-1 && IsRuntimeReminder(c[n].Get("text").Str) {
				n++
			}
			if n == 0 {
				t.Fatalf("message 0 does not start with a runtime reminder: %.300s", m.Raw)
			}
			raw = []byte(`{"role":"user","content":[` + joinRaw(c[n:]) + `]}`)
		}
		cm, err := Canonical(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(cm))
	}
	return out
}

func joinRaw(rs []gjson.Result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Raw
	}
	return strings.Join(parts, ",")
}

// TestProjectMatchesRecordedRequests cuts the session the real CLI wrote
// after every step and projects the cut: it must equal the messages the CLI
// sent at that point while recording (the request answered by the next
// response), so the projection is what a resume of the cut re-sends.
func TestProjectMatchesRecordedRequests(t *testing.T) {
	for _, dir := range recordedDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) { projectMatchesRecordedRequests(t, dir) })
	}
}

func projectMatchesRecordedRequests(t *testing.T, recordedDir string) {
	reqs := recordedRequests(t, recordedDir)
	names, _ := filepath.Glob(filepath.Join(recordedDir, "*-*-*-*-*.jsonl"))
	if len(names) != 1 {
		t.Fatalf("want one session in %s, found %v", recordedDir, names)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := tr.Steps()
	if len(steps) < 4 {
		t.Fatalf("the session has %d steps", len(steps))
	}
	for _, a := range steps {
		var cut bytes.Buffer
		if err := New().WritePrefix(&cut, bytes.NewReader(data), int64(len(data)), tr, a.Step); err != nil {
			t.Fatal(err)
		}
		p, err := Project(&cut)
		if err != nil {
			t.Fatalf("step %d: %v", a.Step, err)
		}
		turns := New().PrefixModelTurns(tr, a.Step)
		want := wireCanonical(t, reqs[turns])
		got := make([]string, len(p.Messages))
		for i, m := range p.Messages {
			got[i] = string(m)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("step %d: projection differs from the recorded request (-recorded +projection):\n%s", a.Step, d)
		}
		// The boundary is the recorded request's last message: its results
		// in the order the CLI stored them (2.1.332: as they completed).
		var ids []string
		msgs := gjson.GetBytes(reqs[turns], "messages").Array()
		for _, b := range msgs[len(msgs)-1].Get("content").Array() {
			ids = append(ids, b.Get("tool_use_id").Str)
		}
		if len(ids) != len(a.Calls) {
			t.Errorf("step %d: the recorded request ends with %d results for %d calls", a.Step, len(ids), len(a.Calls))
		}
		if d := cmp.Diff(ids, p.BoundaryIDs); d != "" {
			t.Errorf("step %d: boundary ids (-want +got):\n%s", a.Step, d)
		}
		if p.SessionID != tr.SessionID {
			t.Errorf("session id %q, want %q", p.SessionID, tr.SessionID)
		}
	}
}

func TestProjectShapes(t *testing.T) {
	line := func(s string) string { return strings.ReplaceAll(s, "'", `"`) + "\n" }
	tests := []struct {
		name    string
		session string
		want    []string
		ids     []string
		err     string
	}{
		{
			name: "parallel results on sibling branches merge in file order",
			session: line(`{'parentUuid':null,'type':'user','uuid':'u1','sessionId':'s','message':{'role':'user','content':'hi'}}`) +
				line(`{'parentUuid':'u1','type':'assistant','uuid':'a1','message':{'id':'m1','role':'assistant','content':[{'type':'text','text':'t'}]}}`) +
				line(`{'parentUuid':'a1','type':'assistant','uuid':'a2','message':{'id':'m1','role':'assistant','content':[{'type':'tool_use','id':'c1','name':'Read','input':{'n':1.50}}]}}`) +
				line(`{'parentUuid':'a2','type':'assistant','uuid':'a3','message':{'id':'m1','role':'assistant','content':[{'type':'tool_use','id':'c2','name':'Bash','input':{}}]}}`) +
				line(`{'parentUuid':'a2','type':'user','uuid':'r1','message':{'role':'user','content':[{'tool_use_id':'c1','type':'tool_result','content':'one'}]}}`) +
				line(`{'type':'attachment','parentUuid':'r1','uuid':'x1','attachment':{'type':'skill_listing'}}`) +
				line(`{'parentUuid':'a3','type':'user','uuid':'r2','message':{'role':'user','content':[{'tool_use_id':'c2','type':'tool_result','content':'two','is_error':false,'cache_control':{'type':'ephemeral'}}]}}`),
			want: []string{
				`{"content":[{"text":"hi","type":"text"}],"role":"user"}`,
				`{"content":[{"text":"t","type":"text"},{"id":"c1","input":{"n":1.50},"name":"Read","type":"tool_use"},{"id":"c2","input":{},"name":"Bash","type":"tool_use"}],"role":"assistant"}`,
				`{"content":[{"content":"one","tool_use_id":"c1","type":"tool_result"},{"content":"two","is_error":false,"tool_use_id":"c2","type":"tool_result"}],"role":"user"}`,
			},
			ids: []string{"c1", "c2"},
		},
		{
			name: "api errors are not sent; a later prompt merges into the results",
			session: line(`{'parentUuid':null,'type':'user','uuid':'u1','message':{'role':'user','content':'hi'}}`) +
				line(`{'parentUuid':'u1','type':'assistant','uuid':'e1','isApiErrorMessage':true,'message':{'id':'x','model':'<synthetic>','role':'assistant','content':[{'type':'text','text':'API Error'}]}}`) +
				line(`{'parentUuid':'e1','type':'assistant','uuid':'a1','message':{'id':'m1','role':'assistant','content':[{'type':'tool_use','id':'c1','name':'Read','input':{}}]}}`) +
				line(`{'parentUuid':'a1','type':'user','uuid':'r1','message':{'role':'user','content':[{'tool_use_id':'c1','type':'tool_result','content':'one'}]}}`) +
				line(`{'parentUuid':'r1','type':'user','uuid':'u2','message':{'role':'user','content':'more'}}`),
			want: []string{
				`{"content":[{"text":"hi","type":"text"}],"role":"user"}`,
				`{"content":[{"id":"c1","input":{},"name":"Read","type":"tool_use"}],"role":"assistant"}`,
				`{"content":[{"content":"one","tool_use_id":"c1","type":"tool_result"},{"text":"more","type":"text"}],"role":"user"}`,
			},
		},
		{
			name:    "compaction is refused",
			session: line(`{'parentUuid':null,'logicalParentUuid':'z','type':'system','subtype':'compact_boundary','uuid':'b1'}`) + line(`{'parentUuid':'b1','type':'user','uuid':'u1','message':{'role':'user','content':'hi'}}`),
			err:     "compacted",
		},
		{
			name:    "broken chain",
			session: line(`{'parentUuid':'gone','type':'user','uuid':'u1','message':{'role':'user','content':'hi'}}`),
			err:     "chain is broken",
		},
		{name: "no entries", session: line(`{'type':'last-prompt','lastPrompt':'x'}`), err: "not a Claude Code session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Project(strings.NewReader(tc.session))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(p.Messages))
			for i, m := range p.Messages {
				got[i] = string(m)
				if !json.Valid(m) {
					t.Errorf("message %d is not valid JSON", i)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.ids, p.BoundaryIDs); d != "" {
				t.Errorf("boundary ids (-want +got):\n%s", d)
			}
		})
	}
}

func TestIsContextReminder(t *testing.T) {
	for text, want := range map[string]bool{
		contextReminderPrefix + "# currentDate\nToday's date is 2026-11-29.\n</system-reminder>\n\n": true,
		contextReminderPrefix + "# currentDate\n":                                                    false,
		"<system-reminder>\nsomething else\n</system-reminder>":                                      false,
		"Survey the project": false,
	} {
		if got := IsContextReminder(text); got != want {
			t.Errorf("IsContextReminder(%.60q) = %v, want %v", text, got, want)
		}
	}
}
