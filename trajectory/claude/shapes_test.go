package claude

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// Small builders for hand-made sessions; fields are in Claude Code's order
// where it matters little and omitted where the decoder does not read them.

func parentJSON(p string) string {
	if p == "" {
		return "null"
	}
	return fmt.Sprintf("%q", p)
}

func prompt(uuid, parent, text string) string {
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"sessionId":"s1","version":"2.1.7","type":"user","message":{"role":"user","content":%q},"uuid":%q}`,
		parentJSON(parent), text, uuid)
}

func asst(uuid, parent, msg, block string) string {
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"sessionId":"s1","version":"2.1.7","message":{"id":%q,"type":"message","role":"assistant","model":"claude-x","content":[%s]},"type":"assistant","uuid":%q}`,
		parentJSON(parent), msg, block, uuid)
}

func text(s string) string { return fmt.Sprintf(`{"type":"text","text":%q}`, s) }

func use(id, name, input string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, name, input)
}

func res(uuid, parent, toolID, content string) string {
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"sessionId":"s1","version":"2.1.7","type":"user","message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%q}]},"uuid":%q,"toolUseResult":{"stdout":"x"}}`,
		parentJSON(parent), toolID, content, uuid)
}

func file(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func decodeString(s string) (*trajectory.Trajectory, error) {
	return New().Decode(strings.NewReader(s), trajectory.Options{})
}

// badInputs are files the decoder must refuse, with the error it gives.
func badInputs() []formattest.BadInput {
	bash := use("t1", "Bash", `{"command":"ls"}`)
	return []formattest.BadInput{
		formattest.Refuse("duplicate uuid", file(prompt("u1", "", "hi"), asst("u1", "u1", "m1", text("x"))),
			formattest.Malformed(2, "duplicate uuid u1 (first used at line 1)")),
		formattest.Refuse("parent cycle", file(prompt("u1", "a2", "hi"), asst("a1", "u1", "m1", text("x")), asst("a2", "a1", "m2", text("y"))),
			formattest.Malformed(3, "parentUuid chain loops back to uuid a2")),
		formattest.Refuse("missing parent", file(prompt("u1", "", "hi"), asst("a1", "gone", "m1", text("x"))),
			formattest.Malformed(2, "parentUuid gone is not a main-thread entry")),
		formattest.Refuse("result without call", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", bash), res("r1", "a1", "t9", "out")),
			formattest.Malformed(3, "tool_result for tool_use_id t9 matches no tool_use on the conversation chain")),
		formattest.Refuse("result before any response", file(res("r1", "", "t1", "out"), prompt("u1", "r1", "hi")),
			formattest.Malformed(1, "tool_use_id t1 matches no tool_use")),
		formattest.Refuse("duplicate tool_use id", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", bash), res("r1", "a1", "t1", "out"), asst("a2", "r1", "m2", bash)),
			formattest.Malformed(4, "duplicate tool_use id t1 (first at line 2)")),
		formattest.Refuse("second result", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", bash), res("r1", "a1", "t1", "out"), res("r2", "r1", "t1", "again")),
			formattest.Malformed(4, "second tool_result for tool_use_id t1 (first at line 3)")),
		formattest.Refuse("subagent transcript", strings.ReplaceAll(file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", text("x"))), `"isSidechain":false`, `"isSidechain":true,"agentId":"abc1234"`),
			formattest.Unsupported(1, "subagent transcript: every entry has isSidechain=true (agentId abc1234) (pass the parent session file instead: s1.jsonl")),
		formattest.Refuse("not JSON", file(prompt("u1", "", "hi"), `{"type":"assistant",`),
			formattest.Malformed(2, "not valid JSON")),
		formattest.Refuse("uuid not a string", file(`{"parentUuid":null,"type":"user","uuid":7,"message":{"content":"x"}}`),
			formattest.Malformed(1, "uuid is not a non-empty string")),
		formattest.Refuse("user without uuid", file(`{"parentUuid":null,"type":"user","message":{"content":"x"}}`),
			formattest.Malformed(1, "user entry has no uuid")),
		formattest.Refuse("parentUuid a number", file(prompt("u1", "", "hi"), `{"parentUuid":5,"type":"assistant","uuid":"a1","message":{"id":"m","content":[]}}`),
			formattest.Malformed(2, "parentUuid is neither a string nor null")),
		formattest.Refuse("tool_use without id", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", `{"type":"tool_use","name":"Bash","input":{}}`)),
			formattest.Malformed(2, "tool_use block has no id")),
		formattest.Refuse("tool_use without name", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", `{"type":"tool_use","id":"t1","input":{}}`)),
			formattest.Malformed(2, "tool_use t1 has no name")),
		formattest.Refuse("tool_result without id", file(prompt("u1", "", "hi"), `{"parentUuid":"u1","type":"user","uuid":"r1","message":{"content":[{"type":"tool_result","content":"x"}]}}`),
			formattest.Malformed(2, "tool_result block has no tool_use_id")),
		formattest.Refuse("response split by a prompt", file(prompt("u1", "", "hi"), asst("a1", "u1", "m1", text("x")), prompt("u2", "a1", "more"), asst("a2", "u2", "m1", text("y"))),
			formattest.Malformed(4, "assistant entry of response m1 is separated from the rest of that response (line 2)")),
		formattest.Refuse("only metadata", file(`{"type":"summary","summary":"t","leafUuid":"x"}`),
			formattest.Malformed(0, "no main-thread user or assistant entry")),
		formattest.Refuse("empty", "", formattest.Malformed(0, "no main-thread user or assistant entry")),
		formattest.Refuse("array line", file(prompt("u1", "", "hi"), `[1,2]`), formattest.Malformed(2, "expected a JSON object")),
	}
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// shape reduces a trajectory to what these tests check.
type shapeCall struct {
	ID, Name, Result  string
	CallLine, ResLine int
	IsError           bool
}

type shapeAction struct {
	Step            int
	Text, Reasoning string
	Calls           []shapeCall
	First, Last     int
}

func shape(t *trajectory.Trajectory) []shapeAction {
	var out []shapeAction
	for _, a := range t.Actions {
		s := shapeAction{Step: a.Step, Text: a.Text, Reasoning: a.Reasoning, First: a.Locator.First, Last: a.Locator.Last}
		for _, c := range a.Calls {
			sc := shapeCall{ID: c.ID, Name: c.Name, CallLine: c.Locator.First}
			if c.Observation != nil {
				sc.Result, sc.ResLine, sc.IsError = c.Observation.Content, c.Observation.Locator.First, c.Observation.IsError
			}
			s.Calls = append(s.Calls, sc)
		}
		out = append(out, s)
	}
	return out
}

type shapeInput struct {
	name string
	in   string
	want []shapeAction
}

// shapeInputs are hand-made sessions with the layouts the decoder handles.
func shapeInputs() []shapeInput {
	bash := func(id string) string { return use(id, "Bash", `{"command":"ls"}`) }
	return []shapeInput{{
		// 2.1.x: each result hangs off the entry of its own tool_use, so
		// one call and one result are off the parentUuid chain.
		name: "parallel siblings off the chain",
		in: file(
			prompt("u1", "", "go"),
			asst("a1", "u1", "m1", `{"type":"thinking","thinking":"hmm","signature":"s"}`),
			asst("a2", "a1", "m1", bash("t1")),
			asst("a3", "a2", "m1", bash("t2")),
			asst("a4", "a2", "m1", bash("t3")), // sibling of a3, off the chain
			res("r1", "a2", "t1", "one"),
			res("r3", "a4", "t3", "three"),
			res("r2", "a3", "t2", "two"),
			asst("a5", "r2", "m2", text("done")),
		),
		want: []shapeAction{
			{Step: 1, Reasoning: "hmm", First: 2, Last: 8, Calls: []shapeCall{
				{ID: "t1", Name: "Bash", Result: "one", CallLine: 3, ResLine: 6},
				{ID: "t2", Name: "Bash", Result: "two", CallLine: 4, ResLine: 8},
				{ID: "t3", Name: "Bash", Result: "three", CallLine: 5, ResLine: 7},
			}},
			{Text: "done", First: 9, Last: 9},
		},
	}, {
		// Streaming tool execution: a result arrives before the next
		// fragment of the same response.
		name: "results interleaved with fragments",
		in: file(
			prompt("u1", "", "go"),
			asst("a1", "u1", "m1", text("first")),
			asst("a2", "a1", "m1", bash("t1")),
			res("r1", "a2", "t1", "one"),
			asst("a3", "r1", "m1", bash("t2")),
			res("r2", "a3", "t2", "two"),
		),
		want: []shapeAction{{Step: 1, Text: "first", First: 2, Last: 6, Calls: []shapeCall{
			{ID: "t1", Name: "Bash", Result: "one", CallLine: 3, ResLine: 4},
			{ID: "t2", Name: "Bash", Result: "two", CallLine: 5, ResLine: 6},
		}}},
	}, {
		name: "rewound branch is not part of the trajectory",
		in: file(
			prompt("u1", "", "go"),
			asst("a1", "u1", "m1", bash("t1")),
			res("r1", "a1", "t1", "old"),
			asst("a2", "r1", "m2", text("old answer")),
			prompt("u2", "", "go again"), // the user rewound to the start
			asst("b1", "u2", "m3", bash("t2")),
			res("q1", "b1", "t2", "new"),
			asst("b2", "q1", "m4", text("new answer")),
		),
		want: []shapeAction{
			{Step: 1, First: 6, Last: 7, Calls: []shapeCall{{ID: "t2", Name: "Bash", Result: "new", CallLine: 6, ResLine: 7}}},
			{Text: "new answer", First: 8, Last: 8},
		},
	}, {
		name: "compaction continues through logicalParentUuid",
		in: file(
			prompt("u1", "", "go"),
			asst("a1", "u1", "m1", bash("t1")),
			res("r1", "a1", "t1", "one"),
			`{"parentUuid":null,"logicalParentUuid":"r1","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"c1","sessionId":"s1","version":"2.1.9"}`,
			`{"parentUuid":"c1","isSidechain":false,"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary"},"uuid":"u2","sessionId":"s1","version":"2.1.9"}`,
			asst("a2", "u2", "m2", bash("t2")),
			res("r2", "a2", "t2", "two"),
		),
		want: []shapeAction{
			{Step: 1, First: 2, Last: 3, Calls: []shapeCall{{ID: "t1", Name: "Bash", Result: "one", CallLine: 2, ResLine: 3}}},
			{Step: 2, First: 6, Last: 7, Calls: []shapeCall{{ID: "t2", Name: "Bash", Result: "two", CallLine: 6, ResLine: 7}}},
		},
	}, {
		name: "compaction whose earlier history is missing",
		in: file(
			`{"parentUuid":null,"logicalParentUuid":"elsewhere","isSidechain":false,"type":"system","subtype":"compact_boundary","uuid":"c1","sessionId":"s1"}`,
			`{"parentUuid":"c1","isSidechain":false,"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary"},"uuid":"u2","sessionId":"s1"}`,
			asst("a2", "u2", "m2", bash("t2")),
			res("r2", "a2", "t2", "two"),
		),
		want: []shapeAction{{Step: 1, First: 3, Last: 4, Calls: []shapeCall{{ID: "t2", Name: "Bash", Result: "two", CallLine: 3, ResLine: 4}}}},
	}, {
		name: "sidechain, synthetic and metadata entries are skipped",
		in: file(
			`{"type":"summary","summary":"t","leafUuid":"a3"}`,
			prompt("u1", "", "go"),
			asst("a1", "u1", "m1", use("t1", "Task", `{"prompt":"p"}`)),
			strings.Replace(prompt("s1", "", "sub"), `"isSidechain":false`, `"isSidechain":true`, 1),
			strings.Replace(asst("s2", "s1", "m9", bash("t9")), `"isSidechain":false`, `"isSidechain":true`, 1),
			`{"parentUuid":"a1","isSidechain":false,"type":"progress","uuid":"p1","data":{}}`,
			`{"parentUuid":"p1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}]},"uuid":"r1"}`,
			strings.Replace(asst("a2", "r1", "x", text("API Error: 500")), `"model":"claude-x"`, `"model":"<synthetic>"`, 1),
			prompt("u2", "a2", "again"),
			asst("a3", "u2", "m2", text("ok")+","+text("fine")),
		),
		want: []shapeAction{
			{Step: 1, First: 3, Last: 7, Calls: []shapeCall{{ID: "t1", Name: "Task", Result: "a\nb", CallLine: 3, ResLine: 7, IsError: true}}},
			{Text: "ok\nfine", First: 10, Last: 10},
		},
	}}
}

func TestShapes(t *testing.T) {
	for _, tt := range shapeInputs() {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := decodeString(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, shape(tr)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionSessionAndTornTail(t *testing.T) {
	in := file(
		prompt("u1", "", "go"),
		strings.Replace(asst("a1", "u1", "m1", text("x")), `"version":"2.1.7"`, `"version":"2.1.9"`, 1),
	) + `{"parentUuid":"a1","type":"user","uuid":"u2","mess`
	tr, err := decodeString(in)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Version != "2.1.9" || tr.SessionID != "s1" || tr.Agent != AgentName || tr.Format != "session-jsonl" {
		t.Errorf("got version %q session %q agent %q format %q", tr.Version, tr.SessionID, tr.Agent, tr.Format)
	}
	if tr.TornTail == nil || tr.TornTail.Line != 3 || tr.Lines != 3 {
		t.Errorf("torn tail %+v, lines %d", tr.TornTail, tr.Lines)
	}
}

func TestWritePrefix(t *testing.T) {
	f := New()
	bash := func(id string) string { return use(id, "Bash", `{"command":"ls"}`) }
	in := file(
		prompt("u1", "", "go"),
		asst("a1", "u1", "m1", bash("t1")),
		res("r1", "a1", "t1", "one"),
		asst("a2", "r1", "m2", text("thinking aloud")),
		prompt("u2", "a2", "more"),
		asst("a3", "u2", "m3", bash("t2")),
		res("r2", "a3", "t2", "two"),
	)
	// No newline after the last result: the prefix must still end in one.
	in = strings.TrimSuffix(in, "\n")
	tr, err := decodeString(in)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReader(in)
	var buf bytes.Buffer
	if err := f.WritePrefix(&buf, src, int64(len(in)), tr, 1); err != nil {
		t.Fatal(err)
	}
	want := file(prompt("u1", "", "go"), asst("a1", "u1", "m1", bash("t1")), res("r1", "a1", "t1", "one"))
	if buf.String() != want {
		t.Errorf("step 1 prefix:\n%s\nwant:\n%s", buf.String(), want)
	}
	if got := f.PrefixModelTurns(tr, 2); got != 3 {
		t.Errorf("PrefixModelTurns(2) = %d, want 3 (two tool responses and a text-only one)", got)
	}
	buf.Reset()
	if err := f.WritePrefix(&buf, src, int64(len(in)), tr, 2); err != nil {
		t.Fatal(err)
	}
	if buf.String() != in+"\n" {
		t.Errorf("step 2 prefix should be the whole file plus a newline")
	}
	for _, bad := range []int{0, 3} {
		var te *trajectory.Error
		if err := f.WritePrefix(&buf, src, int64(len(in)), tr, bad); !errors.As(err, &te) {
			t.Errorf("after-step %d: got %v, want a trajectory error", bad, err)
		}
	}
	// A result written after the next response started cannot be cut.
	odd := file(
		prompt("u1", "", "go"),
		asst("a1", "u1", "m1", bash("t1")),
		asst("a2", "a1", "m2", text("next")),
		res("r1", "a2", "t1", "late"),
	)
	tr, err = decodeString(odd)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WritePrefix(&buf, strings.NewReader(odd), int64(len(odd)), tr, 1); err == nil || !trajectory.IsUnsupported(err) {
		t.Errorf("got %v, want an unsupported error", err)
	}
	// DecodePrefix keeps the response that makes the cut impossible.
	formattest.CheckDecodePrefix(t, f, []byte(odd), trajectory.Options{}, 1, 2)
}

func TestUUIDKeys(t *testing.T) {
	for _, s := range []string{"40100391-2a3b-4c5d-8e9f-0123456789ab", "ffffffff-ffff-ffff-ffff-ffffffffffff"} {
		k, ok := parseUUID(s)
		if !ok || formatUUID(k) != s {
			t.Errorf("%s: round trip gave %s %v", s, formatUUID(k), ok)
		}
	}
	for _, s := range []string{"u1", "40100391-2A3B-4c5d-8e9f-0123456789ab", "40100391-2a3b-4c5d-8e9f-0123456789a-", "4010039--2a3b-4c5d-8e9f-0123456789ab", "40100391x2a3b-4c5d-8e9f-0123456789ab"} {
		if _, ok := parseUUID(s); ok {
			t.Errorf("%s parsed as a canonical uuid", s)
		}
	}
	// Both key forms intern to distinct ids and give their names back.
	tab := newIDTable()
	a, b := tab.intern("40100391-2a3b-4c5d-8e9f-0123456789ab"), tab.intern("u1")
	if a == b || tab.intern("u1") != b || tab.name(a) != "40100391-2a3b-4c5d-8e9f-0123456789ab" || tab.name(b) != "u1" {
		t.Errorf("intern gave %d %d", a, b)
	}
}

func TestSince(t *testing.T) {
	for v, want := range map[string]bool{"2.1.210": true, "2.1.332": true, "2.2.0": true, "3.0.0": true,
		"2.1.209": false, "2.0.999": false, "1.9.500": false, "": false, "2.1": false, "x.y.z": false, "2.1.210-beta.1": true} {
		s := &toolSession{env: trajectory.ToolEnv{Version: v}}
		if got := s.since(grepTotalLinesSince); got != want {
			t.Errorf("since(2.1.210) for %q = %v, want %v", v, got, want)
		}
	}
}
