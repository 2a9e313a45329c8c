package envelope

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
)

// Mini is the envelope of pvisor's mini-swe-agent runner over Chat
// Completions. The runner restores agent.messages from the rebuilt
// trajectory and calls agent.step(), so nothing is added to resume it:
// every request is
//
//	prefix   the rebuilt trajectory's projection (miniswe.Projection),
//	         system message included, ending at O′N
//	live     what the model and the tools added since
//
// and is forwarded unchanged. The first request is the projection itself.
type Mini struct {
	tracker
	prefix []json.RawMessage
	want   []any
}

// NewMini returns the envelope for a trajectory whose projection is prefix.
// mini takes no boundary prompt through the runner.
func NewMini(prefix []json.RawMessage, opts Options) (*Mini, error) {
	if len(prefix) == 0 {
		return nil, fmt.Errorf("mini-swe-agent envelope: the rebuilt trajectory has no messages")
	}
	if opts.Prompt != "" {
		return nil, fmt.Errorf("mini-swe-agent envelope: a boundary prompt is not supported")
	}
	want, err := decodeChatPrefix("mini-swe-agent", prefix)
	if err != nil {
		return nil, err
	}
	return &Mini{tracker: tracker{opts: opts}, prefix: prefix, want: want}, nil
}

// Check refuses a request whose messages do not start with the projection.
func (m *Mini) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	m.checked()
	if req.Route != bridge.RouteChat {
		return nil, bridge.Refuse("mini-swe-agent talks to /v1/chat/completions only; this request went to the %s route", req.Route)
	}
	live, err := m.split(req.Body)
	if err != nil {
		return nil, err
	}
	turns := chatTurns(live)
	if err := m.overBudget(ctx, turns); err != nil {
		return nil, err
	}
	m.accepted("runner", turns, len(live) == 0, false, 0, nil)
	m.mu.Lock()
	m.rep.NonceRemoved-- // the runner resumes without a nonce
	m.mu.Unlock()
	return req.Body, nil
}

// split checks the prefix and returns the live messages after it.
func (m *Mini) split(body []byte) ([]json.RawMessage, error) {
	if !gjson.ValidBytes(body) {
		return nil, bridge.Refuse("the request body is not valid JSON")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return nil, bridge.Refuse("the request has no messages array; mini-swe-agent sends the whole history as messages")
	}
	items := msgs.Array()
	if len(items) < len(m.prefix) {
		return nil, bridge.Refuse("the request holds %d messages; the rebuilt trajectory has %d: the history ends before the boundary", len(items), len(m.prefix))
	}
	for i := range m.prefix {
		if !equalChat(items[i], m.prefix[i], m.want[i]) {
			return nil, bridge.Refuse("message %d (%s) differs from message %d of the rebuilt trajectory (%s)", i, describeChat(items[i]), i, describeChat(gjson.ParseBytes(m.prefix[i])))
		}
	}
	var live []json.RawMessage
	for _, it := range items[len(m.prefix):] {
		live = append(live, json.RawMessage(it.Raw))
	}
	return live, nil
}
