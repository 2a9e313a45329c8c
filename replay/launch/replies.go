package launch

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// ChatReplies turns the recorded actions after the boundary into replies.
// It serves the agents whose tool calls are plain function calls with JSON
// arguments (OpenCode, Pi).
func ChatReplies(c *Continuation) ([]fakemodel.Reply, error) {
	t := c.Trajectory
	i := t.ActionIndex(c.AfterStep)
	if i < 0 {
		return nil, fmt.Errorf("step %d not found", c.AfterStep)
	}
	var out []fakemodel.Reply
	for n, a := range t.Actions[i+1:] {
		rep := fakemodel.Reply{Thinking: c.Paths.String(a.Reasoning), Text: c.Paths.String(a.Text)}
		for _, call := range a.Calls {
			args := call.Arguments
			if !gjson.ValidBytes(args) || !gjson.ParseBytes(args).IsObject() {
				return nil, fmt.Errorf("response %d after the boundary: call %s (%s) has arguments that are not a JSON object", n+1, call.ID, call.Name)
			}
			args, _, err := c.Paths.JSON(args)
			if err != nil {
				return nil, err
			}
			rep.ToolCalls = append(rep.ToolCalls, fakemodel.ToolCall{ID: call.ID, Name: call.Name, Arguments: args})
		}
		if rep.Thinking == "" && rep.Text == "" && len(rep.ToolCalls) == 0 {
			return nil, fmt.Errorf("response %d after the boundary (%s) is empty and cannot be played back", n+1, a.Locator)
		}
		out = append(out, rep)
	}
	return out, nil
}
