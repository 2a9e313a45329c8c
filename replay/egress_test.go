package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/egress"
)

// codexRollout is a Codex rollout recorded in /rec/ws with one
// exec_command step per command (recorded output: "recorded"), run
// without a login shell.
func codexRollout(t *testing.T, dir string, cmds ...string) string {
	t.Helper()
	ts := `"timestamp":"2026-11-29T10:00:00.000Z"`
	lines := []string{
		`{` + ts + `,"type":"session_meta","payload":{"id":"01a20000-0000-7000-8000-000000000002","timestamp":"2026-11-29T10:00:00.000Z","cwd":"/rec/ws","originator":"codex_exec","cli_version":"0.171.0","source":"exec","model_provider":"openai","base_instructions":{"text":"You are Codex."}}}`,
		`{` + ts + `,"type":"turn_context","payload":{"cwd":"/rec/ws","model":"gpt-5.5"}}`,
		`{` + ts + `,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fetch the pages"}]}}`,
	}
	for i, c := range cmds {
		// No login shell and a long yield: a loaded machine (or a login
		// shell waiting on pyenv's lock) must not end the call early.
		args, _ := json.Marshal(map[string]any{"cmd": c, "workdir": "/rec/ws", "login": false, "yield_time_ms": 30000})
		call, _ := json.Marshal(map[string]any{"timestamp": "2026-11-29T10:00:00.000Z", "type": "response_item",
			"payload": map[string]any{"type": "function_call", "name": "exec_command", "arguments": string(args), "call_id": fmt.Sprintf("call_%d", i+1)}})
		out, _ := json.Marshal(map[string]any{"timestamp": "2026-11-29T10:00:00.000Z", "type": "response_item",
			"payload": map[string]any{"type": "function_call_output", "call_id": fmt.Sprintf("call_%d", i+1),
				"output": "Chunk ID: abcdef\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nrecorded\n"}})
		lines = append(lines, string(call), string(out))
	}
	lines = append(lines, `{`+ts+`,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}`)
	path := filepath.Join(dir, "rollout-2026-11-29T10-00-00-01a20000-0000-7000-8000-000000000002.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// egressServer is an HTTP server on addr (a loopback address) that says
// hello.
func egressServer(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello-from-test-server")
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return l.Addr().String()
}

func requireEgress(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the egress proxy needs root (a network namespace per call)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	if err := (toolrun.Isolation{Enabled: true, NoNetwork: true}).Probe(); err != nil {
		t.Skipf("namespaces are not available here: %v", err)
	}
}

// overlaynetMeta decodes metadata.overlaynet of a result.
type overlaynetResult struct {
	Mode        string         `json:"mode"`
	ModeApplied string         `json:"mode_applied"`
	Policy      string         `json:"policy"`
	Allow       []string       `json:"allow"`
	Summary     egress.Summary `json:"summary"`
	Attempts    []egress.Entry `json:"attempts"`
	Journal     string         `json:"journal"`
}

func overlaynetOf(t *testing.T, res *result.Result) overlaynetResult {
	t.Helper()
	raw, err := json.Marshal(res.Metadata["overlaynet"])
	if err != nil {
		t.Fatal(err)
	}
	var o overlaynetResult
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("metadata.overlaynet %s: %v", raw, err)
	}
	return o
}

func runEgress(t *testing.T, net OverlaynetConfig, cmds ...string) (*result.Result, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	req := &Request{Agent: "codex", Trajectory: codexRollout(t, dir, cmds...), AfterStep: len(cmds), Mode: ReplayOnly,
		Workspace: ws, RunID: "e", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		Overlaynet: net}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := Run(ctx, req)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	return res, filepath.Join(dir, "out", "e")
}

// freshOutputs reads the replayed observations in call order.
func freshOutputs(t *testing.T, out string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "observation-comparison.json"))
	if err != nil {
		t.Fatal(err)
	}
	var comps []CallComparison
	if err := json.Unmarshal(data, &comps); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for _, c := range comps {
		diffs = append(diffs, c.Diff)
	}
	return diffs
}

// TestEgressAllowlist: a replayed curl to an allowlisted server on
// 127.0.0.1 gets through the proxy, one to a server on another loopback
// address is refused, and a direct connection around the proxy finds
// nothing; both attempts are journaled with their call.
func TestEgressAllowlist(t *testing.T) {
	requireEgress(t)
	allowed := egressServer(t, "127.0.0.1:0")
	other := egressServer(t, "127.0.0.2:0")
	res, out := runEgress(t, OverlaynetConfig{Mode: toolenv.NetProxy, Policy: egress.PolicyAllowlist, Allow: []string{allowed}},
		"curl -s -m 10 http://"+allowed+"/page",
		"curl -s -m 10 -o /dev/null -w '%{http_code}' http://"+other+"/page",
		"curl -s -m 3 --noproxy '*' http://"+allowed+"/page || echo direct-refused")
	diffs := freshOutputs(t, out)
	for i, want := range []string{"+hello-from-test-server", "+403", "+direct-refused"} {
		if !strings.Contains(diffs[i], want) {
			t.Errorf("call %d: fresh output lacks %q:\n%s", i+1, want, diffs[i])
		}
	}
	o := overlaynetOf(t, res)
	if o.Mode != toolenv.NetProxy || o.ModeApplied != toolenv.NetProxy || o.Policy != egress.PolicyAllowlist {
		t.Errorf("overlaynet: %+v", o)
	}
	if o.Summary.Attempts != 2 || o.Summary.Allowed != 1 || o.Summary.Denied != 1 || len(o.Attempts) != 2 {
		t.Fatalf("summary %+v attempts %+v", o.Summary, o.Attempts)
	}
	a, d := o.Attempts[0], o.Attempts[1]
	if !a.Allowed || fmt.Sprintf("%s:%d", a.Host, a.Port) != allowed || a.BytesDown == 0 || a.BytesUp == 0 ||
		a.Call == nil || a.Call.CallID != "call_1" || a.Call.Step != 1 || a.Call.Tool != "exec_command" {
		t.Errorf("allowed attempt %+v call %+v", a, a.Call)
	}
	if d.Allowed || fmt.Sprintf("%s:%d", d.Host, d.Port) != other || d.Reason != "not-allowlisted" || d.Call == nil || d.Call.CallID != "call_2" {
		t.Errorf("denied attempt %+v", d)
	}
	if iso, _ := res.Metadata["tool_isolation"].(map[string]any); iso["network"] != "egress-proxy" {
		t.Errorf("tool_isolation %v", iso)
	}
	// The journal file holds the same attempts, one JSON object a line.
	f, err := os.Open(o.Journal)
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
	}
	if n != 2 || !strings.HasPrefix(o.Journal, out) {
		t.Errorf("journal %s: %d lines", o.Journal, n)
	}
}

// TestEgressDenyAndPublic: policy deny refuses every attempt; policy
// public refuses the host's own (loopback) addresses and records it.
func TestEgressDenyAndPublic(t *testing.T) {
	requireEgress(t)
	srv := egressServer(t, "127.0.0.1:0")
	for _, policy := range []string{egress.PolicyDeny, egress.PolicyPublic} {
		t.Run(policy, func(t *testing.T) {
			res, out := runEgress(t, OverlaynetConfig{Mode: toolenv.NetProxy, Policy: policy},
				"curl -s -m 10 -o /dev/null -w '%{http_code}' http://"+srv+"/")
			if d := freshOutputs(t, out)[0]; !strings.Contains(d, "+403") {
				t.Errorf("fresh output:\n%s", d)
			}
			o := overlaynetOf(t, res)
			want := map[string]string{egress.PolicyDeny: "policy-deny", egress.PolicyPublic: "private-address"}[policy]
			if len(o.Attempts) != 1 || o.Attempts[0].Allowed || o.Attempts[0].Reason != want || o.Summary.Denied != 1 {
				t.Errorf("attempts %+v", o.Attempts)
			}
		})
	}
}

func TestOverlaynetValidation(t *testing.T) {
	base := func(o OverlaynetConfig) *Request {
		return &Request{Agent: "codex", Trajectory: "t.jsonl", AfterStep: 1, Overlaynet: o}
	}
	for _, tc := range []struct {
		o    OverlaynetConfig
		want string // "" accepted
	}{
		{OverlaynetConfig{Mode: "off"}, ""},
		{OverlaynetConfig{Mode: "off", Policy: "public"}, ""},
		{OverlaynetConfig{Mode: "proxy", Policy: "allowlist", Allow: []string{"pypi.org:443"}}, ""},
		{OverlaynetConfig{Mode: "bridge"}, "must be auto, off or proxy"},
		{OverlaynetConfig{Mode: "proxy", Policy: "open"}, "must be public, deny or allowlist"},
		{OverlaynetConfig{Mode: "proxy", Allow: []string{"x.com"}}, "require --overlaynet-policy allowlist"},
		{OverlaynetConfig{Mode: "proxy", Policy: "allowlist", Allow: []string{"https://x.com"}}, "a URL, not a host"},
		{OverlaynetConfig{Mode: "off", Policy: "deny"}, "needs --overlaynet proxy"},
		{OverlaynetConfig{Mode: "deny", Policy: "allowlist"}, "has nothing to decide"},
	} {
		err := base(tc.o).Validate()
		if tc.want == "" && err != nil && os.Geteuid() == 0 {
			t.Errorf("%+v: %v", tc.o, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
	if m, p := (OverlaynetConfig{Policy: "deny"}).Effective(); m != toolenv.NetAuto || p != "deny" {
		t.Errorf("a policy alone: mode %s policy %s, want auto", m, p)
	}
	if m, p := (OverlaynetConfig{Mode: "proxy"}).Effective(); m != toolenv.NetProxy || p != "public" {
		t.Errorf("proxy alone: policy %s %s, want public", m, p)
	}
}

// TestRunOptions: pVisor's executor host and policy observe are what
// pvisor does, and the result says so; what is not built is refused, and
// a container without its root.
func TestRunOptions(t *testing.T) {
	dir := t.TempDir()
	req := &Request{Agent: "codex", Trajectory: codexRollout(t, dir, "true"), AfterStep: 1, Mode: PrepareOnly,
		RunID: "o", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		Run: RunConfig{Executor: toolenv.ExecutorHost, Policy: toolenv.PolicyObserve}}
	res := Run(context.Background(), req)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	m, _ := res.Metadata["run_options"].(map[string]any)
	if m["executor"] != "host" || m["policy"] != "observe" || m["policy_records"] != "writes_outside_workspace" {
		t.Errorf("run_options %v", m)
	}
	for executor, want := range map[string]string{"container": "add --container-rootfs", "vm": "not built"} {
		rc := RunConfig{Executor: executor}
		req := &Request{Agent: "codex", Trajectory: "t.jsonl", AfterStep: 1, Run: rc}
		if err := req.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", rc, err, want)
		}
	}
}

// TestEgressInOverlay: behind --overlayfs-path the worker runs the proxy,
// and its journal reaches the run's result.
func TestEgressInOverlay(t *testing.T) {
	requireEgress(t)
	overlayAvailable(t)
	srv := egressServer(t, "127.0.0.1:0")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	req := &Request{Agent: "codex", Trajectory: codexRollout(t, dir, "curl -s -m 10 http://"+srv+"/"), AfterStep: 1, Mode: ReplayOnly,
		RunID: "ov", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		Overlay:    OverlayConfig{Path: ws, Commit: "drop"},
		Overlaynet: OverlaynetConfig{Mode: toolenv.NetProxy, Policy: egress.PolicyAllowlist, Allow: []string{srv}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := Run(ctx, req)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	o := overlaynetOf(t, res)
	if o.Summary.Allowed != 1 || len(o.Attempts) != 1 || o.Attempts[0].BytesDown == 0 {
		t.Errorf("overlaynet %+v", o)
	}
	if d := freshOutputs(t, filepath.Join(dir, "out", "ov"))[0]; !strings.Contains(d, "+hello-from-test-server") {
		t.Errorf("fresh output:\n%s", d)
	}
	saved, _ := os.ReadFile(filepath.Join(dir, "out", "ov", "result.json"))
	if !strings.Contains(string(saved), `"mode_applied": "proxy"`) {
		t.Errorf("result.json lacks the overlaynet metadata")
	}
}

// TestEgressAutoWithoutNamespaces: where tools cannot get namespaces,
// auto with policy public runs on the host network and says so; a policy
// that would need enforcing is refused, never silently not applied.
func TestEgressAutoWithoutNamespaces(t *testing.T) {
	saved := toolenv.NoIsolation
	toolenv.NoIsolation = true
	defer func() { toolenv.NoIsolation = saved }()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	traj := codexRollout(t, dir, "true")
	for i, tc := range []struct {
		net     OverlaynetConfig
		failure string
	}{
		{OverlaynetConfig{Mode: toolenv.NetAuto}, ""},
		{OverlaynetConfig{Mode: toolenv.NetAuto, Policy: egress.PolicyDeny}, "enforce"}, // not root: refused by Validate
		{OverlaynetConfig{Mode: toolenv.NetProxy}, "--overlaynet proxy"},
	} {
		req := &Request{Agent: "codex", Trajectory: traj, AfterStep: 1, Mode: ReplayOnly, Workspace: ws,
			RunID: fmt.Sprintf("a%d", i), StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), Overlaynet: tc.net}
		res := Run(context.Background(), req)
		if tc.failure != "" {
			if res.Failure == nil || !strings.Contains(res.Failure.Message, tc.failure) || result.ExitCode(res.Failure) != 2 {
				t.Errorf("%+v: failure %+v, want %q (exit 2)", tc.net, res.Failure, tc.failure)
			}
			continue
		}
		if res.Failure != nil {
			t.Fatalf("%+v: %+v", tc.net, res.Failure)
		}
		if o := overlaynetOf(t, res); o.Mode != toolenv.NetAuto || o.ModeApplied != toolenv.NetOff {
			t.Errorf("auto without namespaces: %+v", o)
		}
		if m, _ := res.Metadata["overlaynet"].(map[string]any); !strings.HasPrefix(fmt.Sprint(m["reason"]), "auto: ") {
			t.Errorf("no reason: %v", m)
		}
	}
}
