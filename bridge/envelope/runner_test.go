package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge"
)

var miniPrefix = []json.RawMessage{
	json.RawMessage(`{"role":"system","content":"sys"}`),
	json.RawMessage(`{"role":"user","content":"task"}`),
	json.RawMessage(`{"content":"Step 1.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"command\":\"ls\"}","name":"bash"},"id":"c1","type":"function"}]}`),
	json.RawMessage(`{"content":"{\n  \"returncode\": 0\n}","role":"tool","tool_call_id":"c1"}`),
}

func miniBody(msgs ...string) []byte {
	return []byte(`{"model":"fake","messages":[` + strings.Join(msgs, ",") + `],"tools":[{"type":"function"}]}`)
}

// runnerEnvelopes are the agents continued through a Python runner.
var runnerEnvelopes = map[string]func([]json.RawMessage, Options) (*Runner, error){
	"mini-swe-agent": runnerOf("mini-swe-agent"), "openhands": runnerOf("openhands"),
}

func runnerOf(agent string) func([]json.RawMessage, Options) (*Runner, error) {
	return func(prefix []json.RawMessage, opts Options) (*Runner, error) { return NewRunner(agent, prefix, opts) }
}

// TestRunnerEnvelope: a runner's requests start with the projection (key
// order and spacing may differ) and are forwarded unchanged; anything else
// is refused, for every runner agent.
func TestRunnerEnvelope(t *testing.T) {
	for agent, newEnv := range runnerEnvelopes {
		t.Run(agent, func(t *testing.T) { testRunnerEnvelope(t, agent, newEnv) })
	}
}

func testRunnerEnvelope(t *testing.T, agent string, newEnv func([]json.RawMessage, Options) (*Runner, error)) {
	p := rawStrings(miniPrefix)
	reordered := `{"role": "assistant", "content": "Step 1.", "tool_calls": [{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
	live := []string{`{"role":"assistant","content":"Step 2.","tool_calls":[{"id":"c2","type":"function","function":{"name":"bash","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c2","content":"x"}`}
	for _, tc := range []struct {
		name string
		body []byte
		err  string
		live int
	}{
		{"boundary", miniBody(p...), "", 0},
		{"reordered keys", miniBody(p[0], p[1], reordered, p[3]), "", 0},
		{"live", miniBody(append(append([]string{}, p...), live...)...), "", 1},
		{"short", miniBody(p[:3]...), "ends before the boundary", 0},
		{"tampered", miniBody(p[0], p[1], p[2], `{"content":"other","role":"tool","tool_call_id":"c1"}`), "differs from message 3", 0},
		{"system replaced", miniBody(append([]string{`{"role":"system","content":"new"}`}, p[1:]...)...), "differs from message 0", 0},
		{"not json", []byte(`{`), "not valid JSON", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newEnv(miniPrefix, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fwd, err := m.Check(context.Background(), &bridge.Request{Route: bridge.RouteChat, Body: tc.body})
			if tc.err != "" {
				var ref *bridge.Refusal
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ref) {
					t.Fatalf("err = %v, want a refusal with %q", err, tc.err)
				}
				return
			}
			if err != nil || string(fwd) != string(tc.body) {
				t.Fatalf("err %v; the body must be forwarded unchanged", err)
			}
			rep := m.Report()
			if rep.Accepted != 1 || rep.MaxLiveTurns != tc.live || rep.NonceRemoved != 0 || (tc.live == 0) != (rep.BoundaryEnds == 1) {
				t.Errorf("report %+v", rep)
			}
		})
	}
	if _, err := newEnv(miniPrefix, Options{Prompt: "p"}); err == nil {
		t.Error("a boundary prompt was accepted")
	}
	if _, err := newEnv(nil, Options{}); err == nil || !strings.Contains(err.Error(), agent) {
		t.Errorf("an empty prefix: %v", err)
	}
	m, _ := newEnv(miniPrefix, Options{})
	if _, err := m.Check(context.Background(), &bridge.Request{Route: bridge.RouteResponses, Body: miniBody(p...)}); err == nil || !strings.Contains(err.Error(), agent+" talks to") {
		t.Errorf("a Responses request: %v", err)
	}
}

// TestMiniBudget: a request past the budget is held and reported, never
// forwarded.
func TestMiniBudget(t *testing.T) {
	fired := 0
	m, _ := NewRunner("mini-swe-agent", miniPrefix, Options{MaxLiveTurns: 1, OnBudget: func() { fired++ }})
	p := rawStrings(miniPrefix)
	over := miniBody(append(append([]string{}, p...), `{"role":"assistant","content":"a"}`, `{"role":"user","content":"b"}`)...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Check(ctx, &bridge.Request{Route: bridge.RouteChat, Body: over}); err == nil || fired != 1 || !m.Report().BudgetExceeded {
		t.Errorf("err %v, fired %d, report %+v", err, fired, m.Report())
	}
}
