package envelope

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
)

// Runner is the envelope of pvisor's Python runners (the agents continued
// through one, as mini-swe-agent and OpenHands are) over Chat Completions. A runner reopens the rebuilt session
// with the agent's own classes and lets the agent build every request from
// it, so nothing is added to resume it: every request is
//
//	prefix   the rebuilt session's projection (the agent's own),
//	         system message included, ending at O′N
//	live     what the model and the tools added since
//
// and is forwarded unchanged. The first request is the projection itself.
type Runner struct {
	*Tracker
	agent  string
	prefix []json.RawMessage
	want   []any
}

// NewRunner returns the envelope of agent's runner for a session whose
// projection is prefix. A runner takes no boundary prompt (it resumes at
// the boundary result).
func NewRunner(agent string, prefix []json.RawMessage, opts Options) (*Runner, error) {
	if len(prefix) == 0 {
		return nil, fmt.Errorf("%s envelope: the rebuilt session has no messages", agent)
	}
	if opts.Prompt != "" {
		return nil, fmt.Errorf("%s envelope: a boundary prompt is not supported", agent)
	}
	want, err := decodeChatPrefix(agent, prefix)
	if err != nil {
		return nil, err
	}
	return &Runner{Tracker: NewTracker(opts), agent: agent, prefix: prefix, want: want}, nil
}

// Check refuses a request whose messages do not start with the projection.
func (m *Runner) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	m.Checked()
	if req.Route != bridge.RouteChat {
		return nil, bridge.Refuse("%s talks to /v1/chat/completions only; this request went to the %s route", m.agent, req.Route)
	}
	live, err := m.split(req.Body)
	if err != nil {
		return nil, err
	}
	turns := chatTurns(live)
	if err := m.OverBudget(ctx, turns); err != nil {
		return nil, err
	}
	m.Accepted("runner", turns, len(live) == 0, false, 0, nil)
	m.mu.Lock()
	m.rep.NonceRemoved-- // the runner resumes without a nonce
	m.mu.Unlock()
	return req.Body, nil
}

// split checks the prefix and returns the live messages after it.
func (m *Runner) split(body []byte) ([]json.RawMessage, error) {
	if !gjson.ValidBytes(body) {
		return nil, bridge.Refuse("the request body is not valid JSON")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return nil, bridge.Refuse("the request has no messages array; %s sends the whole history as messages", m.agent)
	}
	items := msgs.Array()
	if len(items) < len(m.prefix) {
		return nil, bridge.Refuse("the request holds %d messages; the rebuilt session has %d: the history ends before the boundary", len(items), len(m.prefix))
	}
	for i := range m.prefix {
		if !equalChat(items[i], m.prefix[i], m.want[i]) {
			return nil, bridge.Refuse("message %d (%s) differs from message %d of the rebuilt session (%s)", i, describeChat(items[i]), i, describeChat(gjson.ParseBytes(m.prefix[i])))
		}
	}
	var live []json.RawMessage
	for _, it := range items[len(m.prefix):] {
		live = append(live, json.RawMessage(it.Raw))
	}
	return live, nil
}
