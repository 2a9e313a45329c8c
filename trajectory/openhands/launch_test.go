package openhands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/launch/pyrunner/pyrunnertest"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

var recordedEvents, _ = filepath.Abs(filepath.Join("testdata", "recorded", "1.58.2", "events.jsonl"))

func fakeVenv(t *testing.T, version string) string {
	return pyrunnertest.FakeVenv(t, "openhands-sdk", "openhands-sdk "+version)
}

// TestOpenHandsStageAndCollect: staging writes the relocated rebuilt
// events, the runner and its request (no token), and an envelope expecting
// the projection of exactly those events; Collect joins the event files in
// the SDK's numeric order and refuses a conversation shorter than the
// prefix.
func TestOpenHandsStageAndCollect(t *testing.T) {
	data, err := os.ReadFile(recordedEvents)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 3); err != nil {
		t.Fatal(err)
	}
	home, ws := t.TempDir(), t.TempDir()
	c := &launch.Continuation{Trajectory: tr, AfterStep: 3, Source: recordedEvents, Rebuilt: prefix.Bytes(), Workspace: ws,
		Paths: relocate.Paths{From: tr.Cwd, To: ws}, Home: home, Entrypoint: fakeVenv(t, "1.58.2")}
	st, err := launcher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	stagedEvents, _ := os.ReadFile(filepath.Join(home, "rebuilt-events.jsonl"))
	if bytes.Contains(stagedEvents, []byte(tr.Cwd)) || !bytes.Contains(stagedEvents, []byte(ws)) {
		t.Error("the stagedEvents events are not relocated to the workspace")
	}
	want, _ := Projection(bytes.NewReader(stagedEvents))
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": want})
	if _, err := st.Conversation().Check(context.Background(), &bridge.Request{Route: bridge.RouteChat, Body: body}); err != nil {
		t.Errorf("the projection of the stagedEvents events is refused: %v", err)
	}
	cmd, err := st.Command(launch.BridgeAddr{URL: "http://127.0.0.1:1", Token: "pvisor-bridge-secret"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := os.ReadFile(st.(*staged).request)
	if bytes.Contains(req, []byte("secret")) || !strings.Contains(strings.Join(cmd.Env, " "), "OPENAI_API_KEY=pvisor-bridge-secret") {
		t.Errorf("the token belongs in OPENAI_API_KEY only: request %s", req)
	}

	s := st.(*staged)
	if _, err := s.Collect(); err == nil {
		t.Error("Collect accepted a conversation with no events")
	}
	os.MkdirAll(s.events, 0o755)
	lines := bytes.SplitAfter(bytes.TrimSpace(stagedEvents), []byte("\n"))
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
	if !bytes.Equal(got.Session, append(bytes.TrimSpace(stagedEvents), '\n')) {
		t.Error("the collected events are not the stagedEvents ones in order")
	}
	os.Remove(last)
	if _, err := s.Collect(); err == nil || !strings.Contains(err.Error(), "fewer than") {
		t.Errorf("a shortened conversation: %v", err)
	}
}

// TestOpenHandsReplies: the recorded upstream plays the arguments the model
// sent (the tool_call), relocated, not the parsed action pvisor compares.
func TestOpenHandsReplies(t *testing.T) {
	data, _ := os.ReadFile(recordedEvents)
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &launch.Continuation{Trajectory: tr, AfterStep: 5, Source: recordedEvents, Paths: relocate.Paths{From: tr.Cwd, To: "/ws"}}
	reps, err := launcher{}.Replies(c)
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
