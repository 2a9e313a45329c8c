//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/egress"
)

// helloServer says hello on addr, a loopback address of the test's
// namespace.
func helloServer(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello-from-test-server")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestContinueAgentBehindEgressProxy: with --overlaynet-agent the real Pi
// CLI continues in a network namespace of its own. Its model requests
// reach the bridge at the usual address; its own bash tool's curl to an
// allowlisted server gets through pvisor's egress proxy, one to another
// address gets 403, one around the proxy reaches nothing; both attempts
// are journaled as the agent's.
func TestContinueAgentBehindEgressProxy(t *testing.T) {
	s := loadChatSession(t, "pi")
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	// The servers listen before the test's thread enters its loopback-only
	// namespace: the bridge and the egress proxy dial from pvisor's other
	// threads, outside it.
	allowed := helloServer(t, "127.0.0.2:0")
	other := helloServer(t, "127.0.0.3:0")
	bash := func(cmd string) fakemodel.Reply {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return fakemodel.Reply{Text: "Checking.", ToolCalls: []fakemodel.ToolCall{{Name: "bash", Arguments: args}}}
	}
	const step = 2
	fake := serveFakeModel(t, "sk-pvisor-e2e-egress")
	fake.Store(fakemodel.New(fakemodel.Script{Replies: []fakemodel.Reply{
		bash("curl -s -m 10 http://" + allowed + "/page"),
		bash("curl -s -m 10 -o /dev/null -w 'code=%{http_code}' http://" + other + "/page; echo; curl -s -m 3 --noproxy '*' http://" + allowed + "/page || echo direct-refused"),
		{Text: "Done."},
	}}, fakemodel.WithReplyOffset(s.format.PrefixModelTurns(s.traj, step))))
	enterLoopbackNetns(t)

	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream = "openai-chat"
		r.Overlaynet = replay.OverlaynetConfig{Mode: toolenv.NetProxy, Policy: egress.PolicyAllowlist, Allow: []string{allowed}, Agent: true}
	})
	if cr.res.Failure != nil || cr.res.AgentStatus != result.AgentCompleted {
		t.Fatalf("continuation did not complete:\n%s", cr.diagnose())
	}
	var outputs strings.Builder
	for _, req := range fake.Load().Requests() {
		outputs.Write(req.Body)
	}
	for _, want := range []string{"hello-from-test-server", "code=403", "direct-refused"} {
		if !strings.Contains(outputs.String(), want) {
			t.Errorf("no request to the model carries the tool output %q\n%s", want, cr.diagnose())
		}
	}
	raw, _ := json.Marshal(cr.res.Metadata["overlaynet"])
	var o struct {
		Attempts []egress.Entry `json:"attempts"`
		Agent    map[string]any `json:"agent"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	var mine []egress.Entry
	for _, a := range o.Attempts {
		if a.Call != nil && a.Call.Label == toolenv.AgentLabel {
			mine = append(mine, a)
		}
	}
	if len(mine) != 2 || !mine[0].Allowed || fmt.Sprintf("%s:%d", mine[0].Host, mine[0].Port) != allowed ||
		mine[1].Allowed || fmt.Sprintf("%s:%d", mine[1].Host, mine[1].Port) != other {
		t.Errorf("the agent's journaled attempts: %+v (all: %s)", mine, raw)
	}
	if o.Agent["network"] != "egress-proxy" {
		t.Errorf("metadata.overlaynet.agent = %v", o.Agent)
	}
}
