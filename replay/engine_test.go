package replay

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// lineFormat is a minimal format for engine tests: one call per line,
// {"id","cmd","obs"}, each line one step. Its replayer really runs the
// command with sh, so the engine is exercised against real processes.
type lineFormat struct{ failOn string }

func (lineFormat) Agent() string                                        { return "lines" }
func (lineFormat) Detect(head []byte) bool                              { return strings.HasPrefix(string(head), `{"id"`) }
func (lineFormat) PrefixExt() string                                    { return "jsonl" }
func (lineFormat) ReplayTools() []string                                { return []string{"sh"} }
func (lineFormat) PrefixModelTurns(t *trajectory.Trajectory, n int) int { return n }
func (lineFormat) CheckReplayable(c *trajectory.ToolCall) error {
	if c.Name != "sh" {
		return errors.New("not a shell call")
	}
	return nil
}

func (lineFormat) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	t := &trajectory.Trajectory{Agent: "lines", SessionID: "s"}
	sc := bufio.NewScanner(r)
	var off int64
	for n := 1; sc.Scan(); n++ {
		var rec struct{ ID, Cmd, Obs, Tool string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, trajectory.Errorf(n, "%v", err)
		}
		loc := trajectory.Locator{Unit: "line", First: n, Last: n, StartByte: off, EndByte: off + int64(len(sc.Bytes())) + 1}
		off = loc.EndByte
		name := rec.Tool
		if name == "" {
			name = "sh"
		}
		args, _ := json.Marshal(map[string]string{"cmd": rec.Cmd})
		t.Actions = append(t.Actions, trajectory.Action{Locator: loc, Calls: []trajectory.ToolCall{{
			ID: rec.ID, Name: name, Arguments: args, Locator: loc,
			Observation: &trajectory.Observation{Content: rec.Obs, Locator: loc}}}})
	}
	t.NumberSteps()
	return t, nil
}

func (lineFormat) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, n int) error {
	a, _ := t.Step(n)
	_, err := io.Copy(w, io.NewSectionReader(src, 0, a.Locator.EndByte))
	return err
}

func (f lineFormat) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	return &lineSession{env: env, failOn: f.failOn}, nil
}

func (lineFormat) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, n int, fresh map[string]trajectory.Fresh) error {
	for _, a := range t.Steps() {
		if a.Step > n {
			break
		}
		c := a.Calls[0]
		line, _ := json.Marshal(map[string]string{"id": c.ID, "obs": fresh[c.ID].Content})
		fmt.Fprintf(w, "%s\n", line)
	}
	return nil
}

type lineSession struct {
	env    trajectory.ToolEnv
	failOn string
}

func (s *lineSession) Execute(ctx context.Context, step int, c *trajectory.ToolCall) (trajectory.Fresh, error) {
	if c.ID == s.failOn {
		return trajectory.Fresh{}, errors.New("executor broke")
	}
	var args struct{ Cmd string }
	json.Unmarshal(c.Arguments, &args)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "sh", "-c", args.Cmd)
	cmd.Dir = s.env.Workspace
	out, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	return trajectory.Fresh{Content: string(out), IsError: err != nil, ExitCode: &code, Duration: time.Since(start)}, nil
}

func (s *lineSession) Close() error { return nil }

func withLineFormat(t *testing.T, f lineFormat) {
	old := lookupFormat
	lookupFormat = func(name string) (trajectory.Format, bool) {
		if name == "lines" {
			return f, true
		}
		return old(name)
	}
	t.Cleanup(func() { lookupFormat = old })
}

func writeLines(t *testing.T, dir string, lines ...string) string {
	p := filepath.Join(dir, "t.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	return p
}

func TestReplayOnlyComparesAndRebuilds(t *testing.T) {
	withLineFormat(t, lineFormat{})
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("fresh\n"), 0o644)
	traj := writeLines(t, dir,
		`{"id":"c1","cmd":"echo hello","obs":"hello\n"}`,
		`{"id":"c2","cmd":"cat a.txt","obs":"recorded\n"}`,
		`{"id":"c3","cmd":"echo later","obs":"later\n"}`)
	res := Run(context.Background(), &Request{Agent: "lines", Trajectory: traj, AfterStep: 2, Mode: ReplayOnly,
		Workspace: ws, RunID: "r", StateRoot: dir + "/state", OutputRoot: dir + "/out"})
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	if *res.Phase != result.PhaseReplayed || res.ReplayedToolCalls != 2 || res.Quality != result.QualityVerified {
		t.Errorf("result: phase %s, replayed %d, quality %s", *res.Phase, res.ReplayedToolCalls, res.Quality)
	}
	out := filepath.Join(dir, "out", "r")
	var comps []CallComparison
	data, _ := os.ReadFile(filepath.Join(out, "observation-comparison.json"))
	json.Unmarshal(data, &comps)
	want := []CallComparison{
		{Step: 1, CallID: "c1", Tool: "sh", Exact: true},
		{Step: 2, CallID: "c2", Tool: "sh", Exact: false,
			Diff: "--- original/c2\n+++ replayed/c2\n@@ -1 +1 @@\n-recorded\n+fresh\n"},
	}
	if d := cmp.Diff(want, comps); d != "" {
		t.Errorf("observation comparison (-want +got):\n%s", d)
	}
	rebuilt, _ := os.ReadFile(filepath.Join(out, "native", "reconstructed-trajectory.jsonl"))
	if got := string(rebuilt); got != "{\"id\":\"c1\",\"obs\":\"hello\\n\"}\n{\"id\":\"c2\",\"obs\":\"fresh\\n\"}\n" {
		t.Errorf("rebuilt session:\n%s", got)
	}
	// Streamed to its file, the session is hashed on the way.
	sum256 := sha256.Sum256(rebuilt)
	if raw, _ := os.ReadFile(filepath.Join(out, "replay-events.jsonl")); !strings.Contains(string(raw), `"prepared_only":false,"sha256":"`+hex.EncodeToString(sum256[:])+`"`) {
		t.Errorf("session_rebuilt does not carry the rebuilt file's sha256 %x", sum256)
	}
	events := readEvents(t, filepath.Join(out, "replay-events.jsonl"))
	wantEv := []string{"run_started", "plan_validated", "tool_started", "tool_finished", "tool_started", "tool_finished", "session_rebuilt", "run_finished"}
	if d := cmp.Diff(wantEv, events); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	var sum Summary
	data, _ = os.ReadFile(filepath.Join(out, "replay-summary.json"))
	json.Unmarshal(data, &sum)
	if sum.ExactObservations != 1 || sum.DifferentObservations != 1 || sum.ReplayedToolCalls != 2 {
		t.Errorf("summary %+v", sum)
	}
}

func TestReplayExecutorFailureLeavesStateAmbiguous(t *testing.T) {
	withLineFormat(t, lineFormat{failOn: "c2"})
	dir := t.TempDir()
	traj := writeLines(t, dir, `{"id":"c1","cmd":"true","obs":""}`, `{"id":"c2","cmd":"true","obs":""}`)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o700)
	req := func(run, out string) *Request {
		return &Request{Agent: "lines", Trajectory: traj, AfterStep: 2, Mode: ReplayOnly, Workspace: ws,
			RunID: run, StateRoot: dir + "/state", OutputRoot: dir + "/" + out}
	}
	res := Run(context.Background(), req("r", "out1"))
	if res.Failure == nil || res.Failure.Category != result.ExecutorError || result.ExitCode(res.Failure) != 30 {
		t.Fatalf("first run: %+v", res.Failure)
	}
	if res.Quality != result.QualityDegraded || res.Metadata["replayed_tool_calls_complete"] != false {
		t.Errorf("failed run must be degraded and incomplete: %+v", res)
	}
	// As pVisor: the calls that finished before the failure (c1).
	if res.ReplayedToolCalls != 1 {
		t.Errorf("replayed_tool_calls %d, want 1 (c1 finished before c2 failed)", res.ReplayedToolCalls)
	}
	// The same state dir may not be trusted again.
	res = Run(context.Background(), req("r", "out2"))
	if res.Failure == nil || res.Failure.Category != result.AmbiguousExecution || result.ExitCode(res.Failure) != 31 ||
		!strings.Contains(res.Failure.Message, "c2") {
		t.Fatalf("second run: %+v", res.Failure)
	}
}

func TestReplayStaleObservationIsReusedAndDegrades(t *testing.T) {
	withLineFormat(t, lineFormat{})
	dir := t.TempDir()
	traj := writeLines(t, dir, `{"id":"c1","cmd":"x","obs":"from the web\n","tool":"web"}`)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o700)
	base := Request{Agent: "lines", Trajectory: traj, AfterStep: 1, Mode: ReplayOnly, Workspace: ws, StateRoot: dir + "/state", OutputRoot: dir + "/out"}
	r1 := base
	r1.RunID = "a"
	if res := Run(context.Background(), &r1); res.Failure == nil || res.Failure.Category != result.UnsupportedAgent ||
		!strings.Contains(res.Failure.Message, `step 1: tool "web" (call c1)`) {
		t.Fatalf("without --allow-stale-observations: %+v", res.Failure)
	}
	r2 := base
	r2.RunID, r2.AllowStaleObservations = "b", true
	res := Run(context.Background(), &r2)
	if res.Failure != nil || res.Quality != result.QualityDegraded || res.ReplayedToolCalls != 0 {
		t.Fatalf("stale run: %+v %+v", res.Failure, res)
	}
	rebuilt, _ := os.ReadFile(filepath.Join(dir, "out", "b", "native", "reconstructed-trajectory.jsonl"))
	if !strings.Contains(string(rebuilt), "from the web") {
		t.Errorf("stale observation not reused: %s", rebuilt)
	}
}

func readEvents(t *testing.T, path string) []string {
	t.Helper()
	recs, err := result.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range recs {
		out = append(out, recs[i].Name())
	}
	return out
}
