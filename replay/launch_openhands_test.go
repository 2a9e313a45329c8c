package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/openhands"
)

var ohRecorded, _ = filepath.Abs(filepath.Join("..", "trajectory", "openhands", "testdata", "recorded", "1.58.2", "events.jsonl"))

// fakeOHVenv lays out an `openhands-sdk` script whose shebang names a
// "python" that prints what the SDK's version script would.
func fakeOHVenv(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(bin, "python")
	os.WriteFile(py, []byte("#!/bin/sh\necho openhands-sdk "+version+"\n"), 0o755)
	entry := filepath.Join(bin, "openhands-sdk")
	os.WriteFile(entry, []byte("#!"+py+"\nimport importlib.metadata\n"), 0o755)
	return entry
}

// TestOpenHandsStageAndCollect: staging writes the relocated rebuilt
// events, the runner and its request (no token), and an envelope expecting
// the projection of exactly those events; Collect joins the event files in
// the SDK's numeric order and refuses a conversation shorter than the
// prefix.
func TestOpenHandsStageAndCollect(t *testing.T) {
	data, err := os.ReadFile(ohRecorded)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := openhands.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := openhands.New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 3); err != nil {
		t.Fatal(err)
	}
	home, ws := t.TempDir(), t.TempDir()
	c := &Continuation{Trajectory: tr, AfterStep: 3, Source: ohRecorded, Rebuilt: prefix.Bytes(), Workspace: ws,
		Paths: relocate.Paths{From: tr.Cwd, To: ws}, Home: home, Entrypoint: fakeOHVenv(t, "1.58.2")}
	st, err := openhandsLauncher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	staged, _ := os.ReadFile(filepath.Join(home, "rebuilt-events.jsonl"))
	if bytes.Contains(staged, []byte(tr.Cwd)) || !bytes.Contains(staged, []byte(ws)) {
		t.Error("the staged events are not relocated to the workspace")
	}
	want, _ := openhands.Projection(bytes.NewReader(staged))
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": want})
	if _, err := st.Conversation().Check(context.Background(), &bridge.Request{Route: bridge.RouteChat, Body: body}); err != nil {
		t.Errorf("the projection of the staged events is refused: %v", err)
	}
	cmd, err := st.Command(BridgeAddr{URL: "http://127.0.0.1:1", Token: "pvisor-bridge-secret"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := os.ReadFile(st.(*openhandsStaged).request)
	if bytes.Contains(req, []byte("secret")) || !strings.Contains(strings.Join(cmd.Env, " "), "OPENAI_API_KEY=pvisor-bridge-secret") {
		t.Errorf("the token belongs in OPENAI_API_KEY only: request %s", req)
	}

	s := st.(*openhandsStaged)
	if _, err := s.Collect(); err == nil {
		t.Error("Collect accepted a conversation with no events")
	}
	os.MkdirAll(s.events, 0o755)
	lines := bytes.SplitAfter(bytes.TrimSpace(staged), []byte("\n"))
	var last string
	for i, l := range lines {
		width := 5
		if i == 1 {
			width = 6 // the SDK pads to at least 5 digits: order by number, not by name
		}
		last = filepath.Join(s.events, fmt.Sprintf("event-%0*d-%08x.json", width, i, i))
		os.WriteFile(last, bytes.TrimSpace(l), 0o600)
	}
	got, err := s.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Session, append(bytes.TrimSpace(staged), '\n')) {
		t.Error("the collected events are not the staged ones in order")
	}
	os.Remove(last)
	if _, err := s.Collect(); err == nil || !strings.Contains(err.Error(), "fewer than") {
		t.Errorf("a shortened conversation: %v", err)
	}
}

// TestOpenHandsReplies: the recorded upstream plays the arguments the model
// sent (the tool_call), relocated, not the parsed action pvisor compares.
func TestOpenHandsReplies(t *testing.T) {
	data, _ := os.ReadFile(ohRecorded)
	tr, err := openhands.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Continuation{Trajectory: tr, AfterStep: 5, Source: ohRecorded, Paths: relocate.Paths{From: tr.Cwd, To: "/ws"}}
	reps, err := openhandsLauncher{}.Replies(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 || len(reps[1].ToolCalls) != 2 || reps[0].Text != "A wrong edit." {
		t.Fatalf("replies %+v", reps)
	}
	args := string(reps[0].ToolCalls[0].Arguments)
	if !strings.Contains(args, `"path": "/ws/README.md"`) || !strings.Contains(args, `"security_risk"`) || strings.Contains(args, "FileEditorAction") {
		t.Errorf("arguments %s", args)
	}
}

// TestOpenHandsRefusedBeforeAnythingRuns: V0 trajectories and SDK
// releases outside the tested range are exit 11, a boundary prompt exit
// 2, before a tool of the prefix ran.
func TestOpenHandsRefusedBeforeAnythingRuns(t *testing.T) {
	v0, _ := filepath.Abs(filepath.Join("..", "testdata", "trajectories", "openhands", "ohands_trajs_basic.json"))
	for _, tc := range []struct {
		name, traj, version, prompt string
		category                    string
		exit                        int
		says                        string
	}{
		{"V0", v0, "1.58.2", "", result.UnsupportedAgent, 11, "continuing an OpenHands V0 trajectory"},
		{"untested SDK", ohRecorded, "1.59.0", "", result.UnsupportedVersion, 11, "outside the tested range"},
		{"boundary prompt", ohRecorded, "1.58.2", "go on", result.ConfigurationError, 2, "--boundary-user-prompt is not supported for openhands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			req := &Request{Agent: "openhands", Trajectory: tc.traj, AfterStep: 1, Workspace: ws, RunID: "o",
				StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), BoundaryUserPrompt: tc.prompt,
				AgentEntrypoint: fakeOHVenv(t, tc.version), Upstream: UpstreamRecorded, IdleTimeout: 20 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res := Run(ctx, req)
			if res.Failure == nil || res.Failure.Category != tc.category || result.ExitCode(res.Failure) != tc.exit ||
				!strings.Contains(res.Failure.Message, tc.says) {
				t.Fatalf("want %s (exit %d) saying %q, got %s", tc.category, tc.exit, tc.says, res.Line())
			}
			if ev, err := os.ReadFile(filepath.Join(dir, "out", "o", "replay-events.jsonl")); err == nil && bytes.Contains(ev, []byte("tool_started")) {
				t.Error("a tool ran although the continuation was refused up front")
			}
		})
	}
}
