package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/egress"
)

// execCall is a Codex exec_command call running cmd.
func execCall(cmd string) fakemodel.ToolCall {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return fakemodel.ToolCall{Name: "exec_command", Arguments: args}
}

// --overlaynet-agent: the continued CLI (the stand-in Codex) runs in a
// network namespace of its own. It reaches the bridge at its usual
// address; its own tools' curl to an allowlisted server gets through the
// egress proxy, one to another address is refused, and one around the
// proxy finds nothing; the two attempts are journaled as the agent's.
func TestContinueAgentBehindEgressProxy(t *testing.T) {
	requireEgress(t)
	allowed := egressServer(t, "127.0.0.2:0")
	other := egressServer(t, "127.0.0.3:0")
	script := fakemodel.Script{Replies: []fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{execCall("curl -s -m 10 http://" + allowed + "/page")}},
		{ToolCalls: []fakemodel.ToolCall{execCall("curl -s -m 10 -o /dev/null -w '%{http_code}' http://" + other + "/page; echo; " +
			"curl -s -m 3 --noproxy '*' http://" + allowed + "/page || echo direct-refused")}},
		{Text: "Done."},
	}}
	fake := fakemodel.New(script)
	model := httptest.NewServer(fake)
	defer model.Close()
	t.Setenv("PVISOR_TEST_MODEL_KEY", "sk-test")

	f := newContFixture(t, "FAKE_CODEX_MODE=run")
	f.req.Upstream = "openai-responses"
	f.req.Endpoint = &Endpoint{BaseURL: model.URL + "/v1", KeyEnv: "PVISOR_TEST_MODEL_KEY"}
	f.req.Overlaynet = OverlaynetConfig{Mode: toolenv.NetProxy, Policy: egress.PolicyAllowlist, Allow: []string{allowed}, Agent: true}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := Run(ctx, f.req)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	cont, err := os.ReadFile(f.out("native/continued-trajectory.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hello-from-test-server", `403\n`, "direct-refused"} {
		if !strings.Contains(string(cont), want) {
			t.Errorf("the agent's tool outputs lack %q:\n%s", want, cont)
		}
	}
	o := overlaynetOf(t, res)
	var mine []egress.Entry
	for _, a := range o.Attempts {
		if a.Call != nil && a.Call.Label == toolenv.AgentLabel {
			mine = append(mine, a)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("%d attempts journaled as the agent's, want 2: %+v", len(mine), o.Attempts)
	}
	if a := mine[0]; !a.Allowed || fmt.Sprintf("%s:%d", a.Host, a.Port) != allowed || a.BytesDown == 0 {
		t.Errorf("the allowed attempt: %+v", a)
	}
	if d := mine[1]; d.Allowed || fmt.Sprintf("%s:%d", d.Host, d.Port) != other || d.Reason != "not-allowlisted" {
		t.Errorf("the denied attempt: %+v", d)
	}
	agent, _ := res.Metadata["overlaynet"].(map[string]any)["agent"].(map[string]any)
	if agent["network"] != "egress-proxy" || agent["label"] != toolenv.AgentLabel {
		t.Errorf("metadata.overlaynet.agent = %v", agent)
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("the model got %d requests through the bridge, want 3", n)
	}
}

// Without a namespace to enforce it in, --overlaynet-agent is refused.
func TestOverlaynetAgentNeedsAMode(t *testing.T) {
	for _, net := range []OverlaynetConfig{{Agent: true}, {Mode: toolenv.NetOff, Agent: true}, {Mode: toolenv.NetAuto, Agent: true}} {
		err := net.Check()
		if err == nil || !strings.Contains(err.Error(), "--overlaynet-agent needs --overlaynet proxy") {
			t.Errorf("%+v: %v", net, err)
		}
	}
}
