package codex

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

const e2eSession = "../../testdata/e2e/sessions/codex@0.171.0"

// recordedRequests returns the input arrays of the model requests the real
// Codex 0.171.0 sent while it wrote the e2e session, in order.
func recordedRequests(t *testing.T) [][]json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(e2eSession, "requests.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]json.RawMessage
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var rec struct {
			Kind string
			Body struct{ Input []json.RawMessage }
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "main" {
			out = append(out, rec.Body.Input)
		}
	}
	if len(out) == 0 {
		t.Fatal("no recorded requests")
	}
	return out
}

func e2eRollout(t *testing.T) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(e2eSession, "rollout-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("want one rollout in %s, got %v", e2eSession, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func withoutID(raw json.RawMessage) string {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return "invalid: " + err.Error()
	}
	delete(m, "id")
	b, _ := json.Marshal(m)
	return string(b)
}

// Every request the real CLI sent is its instructions message plus a prefix
// of the projection, byte for byte; the last one holds everything up to the
// final answer. So the projection of a rollout cut at a step boundary is
// exactly the input Codex sends when it resumes there.
func TestProjectMatchesRecordedRequests(t *testing.T) {
	p, err := Project(bytes.NewReader(e2eRollout(t)))
	if err != nil {
		t.Fatal(err)
	}
	if p.SessionID != "01a22998-569d-74b2-aebf-25f39bc1a17a" || p.Instructions == nil ||
		!strings.HasPrefix(*p.Instructions, "You are Codex") {
		t.Fatalf("session meta: id %q, instructions %v", p.SessionID, p.Instructions != nil)
	}
	reqs := recordedRequests(t)
	for i, input := range reqs {
		first := gjson.ParseBytes(input[0])
		if first.Get("role").Str != "developer" || !strings.HasPrefix(first.Get("content.0.text").Str, (*p.Instructions)[:200]) {
			t.Errorf("request %d: input[0] is not the runtime instructions message: %.200s", i, input[0])
		}
		if withoutID(input[0]) != withoutID(reqs[0][0]) {
			t.Errorf("request %d: the instructions message changed within one run", i)
		}
		rest := input[1:]
		if len(rest) > len(p.Items) {
			t.Fatalf("request %d has %d items after the instructions, the projection only %d", i, len(rest), len(p.Items))
		}
		for j, it := range rest {
			if !bytes.Equal(it, p.Items[j]) {
				t.Errorf("request %d item %d differs from the projection:\n%s", i, j+1, cmp.Diff(string(p.Items[j]), string(it)))
			}
		}
	}
	last := reqs[len(reqs)-1]
	if n := len(p.Items) - (len(last) - 1); n != 1 || gjson.GetBytes(p.Items[len(p.Items)-1], "role").Str != "assistant" {
		t.Errorf("the projection should end with the final answer right after the last request's input; %d items more", n)
	}
	if ids := p.BoundaryCallIDs(); len(ids) != 0 {
		t.Errorf("a rollout ending in an answer has no boundary outputs, got %v", ids)
	}
}

// Cut at each step, the projection ends at that step's outputs, and those are
// exactly what the next recorded request ended with.
func TestProjectPrefixEndsAtBoundary(t *testing.T) {
	data := e2eRollout(t)
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := recordedRequests(t)
	for _, a := range tr.Steps() {
		var prefix bytes.Buffer
		if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, a.Step); err != nil {
			t.Fatal(err)
		}
		p, err := Project(&prefix)
		if err != nil {
			t.Fatal(err)
		}
		want := reqs[New().PrefixModelTurns(tr, a.Step)][1:]
		if d := cmp.Diff(rawStrings(want), rawStrings(p.Items)); d != "" {
			t.Errorf("step %d: projection differs from the request Codex sent next (-request +projection):\n%s", a.Step, d)
		}
		var ids []string
		for _, c := range a.Calls {
			ids = append(ids, c.ID)
		}
		if d := cmp.Diff(ids, p.BoundaryCallIDs()); d != "" {
			t.Errorf("step %d boundary call ids (-calls +projection):\n%s", a.Step, d)
		}
	}
}

func rawStrings(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

func TestProjectRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no records"},
		{"not meta first", rollout(user, meta), "session_meta"},
		{"compacted", rollout(meta, user, `{"timestamp":"t","type":"compacted","payload":{"message":"s"}}`), "compacted"},
		{"forked", rollout(`{"timestamp":"t","type":"session_meta","payload":{"id":"b","history_base":{"thread_id":"p"}}}`), "forked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Project(bytes.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestProjectDropsInternalMembersAndGhosts(t *testing.T) {
	data := rollout(meta,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"a\"b"}],"internal_chat_message_metadata_passthrough":{"x":1}}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{}}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count"}}`)
	p, err := Project(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"a\"b"}]}`}
	if d := cmp.Diff(want, rawStrings(p.Items)); d != "" {
		t.Error(d)
	}
}

func FuzzProject(f *testing.F) {
	f.Add(rollout(meta, user, fc("a", "exec_command", `{"cmd":"ls"}`), out("a", "x"), say("ok")))
	f.Add(rollout(meta,
		`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"internal_chat_message_metadata_passthrough":{}}}`))
	f.Add(rollout(`{"timestamp":"t","type":"session_meta","payload":{"id":"x","base_instructions":"plain"}}`, user))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Project(bytes.NewReader(data))
		if err != nil {
			if _, ok := err.(*trajectory.Error); !ok {
				t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
			}
			return
		}
		for i, it := range p.Items {
			if !json.Valid(it) || gjson.GetBytes(it, "internal_chat_message_metadata_passthrough").Exists() {
				t.Fatalf("item %d is not clean JSON: %s", i, it)
			}
		}
		p.BoundaryCallIDs()
	})
}
