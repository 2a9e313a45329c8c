package progress

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/result"
)

type fakeConv struct{ rep envelope.Report }

func (c *fakeConv) Check(context.Context, *bridge.Request) ([]byte, error) {
	c.rep.MaxLiveTurns++
	return []byte("{}"), nil
}
func (c *fakeConv) Report() envelope.Report { return c.rep }

// A live line is rewritten in place and ended once; model requests through
// the wrapped conversation are counted; count_tokens calls are not.
func TestProgressLive(t *testing.T) {
	var buf bytes.Buffer
	p := New(Live, &buf, 3)
	p.Event(result.EventToolStarted, map[string]any{"batch": 1, "tool": "Bash"})
	conv := p.Conversation(&fakeConv{})
	conv.Check(context.Background(), &bridge.Request{Route: bridge.RouteMessages})
	conv.Check(context.Background(), &bridge.Request{Route: bridge.RouteCountTokens})
	conv.Check(context.Background(), &bridge.Request{Route: bridge.RouteMessages})
	p.Event(result.EventRunFinished, map[string]any{"status": "continued"})
	out := buf.String()
	if strings.Count(out, "\r\033[K") != 4 || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "done: continued\n") {
		t.Errorf("live output %q", out)
	}
	for _, want := range []string{"replaying step 1/3: Bash", "model request 1 (1 live step(s) so far)", "model request 2 (3 live step(s) so far)"} {
		if !strings.Contains(out, want) {
			t.Errorf("live output lacks %q: %q", want, out)
		}
	}
	if New(Off, &buf, 1) != nil || New("", &buf, 1) != nil {
		t.Error("quiet modes report")
	}
	var quiet *Reporter
	quiet.Event(result.EventToolStarted, nil) // a nil progress is silent, not a panic
	quiet.Say("x")
}
