package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// The test binary doubles as the replay child: "real" runs the actual
// child side, "wait" is a replay that lasts until it is told to stop.
const fakeChildEnv = "PVISOR_BATCH_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeChildEnv) {
	case "real":
		os.Exit(ChildMain(os.Stdin, os.Stdout, os.Stderr))
	case "wait":
		var req replay.Request
		json.NewDecoder(os.Stdin).Decode(&req)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "ready")
		select {
		case <-sig:
		case <-time.After(time.Minute):
		}
		res := result.New(req.RunID, req.Agent)
		res.Fail(result.ContinuationError, "stopped by SIGTERM")
		os.Stdout.Write(res.Line())
		os.Exit(40)
	}
	os.Exit(m.Run())
}

// codexSpec is a study over the recorded Codex session and its repository.
func codexSpec(t *testing.T, mode replay.Mode, steps Steps, repeats int) (*Spec, []*Run) {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/e2e/sessions/codex@0.171.0")
	if err != nil {
		t.Fatal(err)
	}
	spec := &Spec{File: filepath.Join(dir, "study.toml"), OutputDir: t.TempDir(), Entries: []Entry{{
		Pos: "study.toml:1", Request: replay.Request{Agent: "codex", Mode: mode, Upstream: "recorded"},
		Trajectories: []string{"rollout-*.jsonl"}, Steps: steps, Workspace: filepath.Join(dir, "repo.tar.gz"), Repeats: repeats,
	}}}
	runs, errs := Expand(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return spec, runs
}

// inProcess stands in for the child in tests of the batch machinery.
type inProcess func(ctx context.Context, req *replay.Request) *result.Result

func (f inProcess) Exec(ctx context.Context, req *replay.Request, log io.Writer) ([]byte, error) {
	return bytes.TrimSpace(f(ctx, req).Line()), nil
}

func TestEveryRunGetsAFreshWorkspace(t *testing.T) {
	spec, runs := codexSpec(t, replay.ReplayOnly, Steps{All: true}, 2)
	if len(runs) != 10 {
		t.Fatalf("expanded %d runs, want 5 steps × 2 repeats", len(runs))
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	exec := inProcess(func(ctx context.Context, req *replay.Request) *result.Result {
		res := result.New(req.RunID, req.Agent)
		readme, err := os.ReadFile(filepath.Join(req.Workspace, "README.md"))
		_, dirty := os.Stat(filepath.Join(req.Workspace, "dirty"))
		if err != nil || !bytes.Contains(readme, []byte("greting")) || dirty == nil {
			res.Fail(result.WorkspaceError, fmt.Sprintf("workspace not pristine: %v %q", err, readme))
		}
		mu.Lock()
		if seen[req.Workspace] {
			res.Fail(result.WorkspaceError, "workspace shared with another run")
		}
		seen[req.Workspace] = true
		mu.Unlock()
		os.WriteFile(filepath.Join(req.Workspace, "dirty"), nil, 0o644)
		os.WriteFile(filepath.Join(req.Workspace, "README.md"), []byte("fixed"), 0o644)
		return res
	})
	var out bytes.Buffer
	sum, err := Execute(context.Background(), runs, NewLayout(spec), Options{Jobs: 3, Exec: exec, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 10 || sum.Failed != 0 {
		t.Fatalf("ran %d, failed %d:\n%s", sum.Ran, sum.Failed, out.String())
	}
}

func TestInterruptStopsRunsCleanlyAndResumeRedoesThem(t *testing.T) {
	spec, runs := codexSpec(t, replay.PrepareOnly, Steps{List: []int{1, 2, 3}}, 1)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	layout := NewLayout(spec)
	t.Setenv(fakeChildEnv, "wait")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	go func() {
		// Stop the batch once two runs are under way (jobs = 2).
		started := 0
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"run_started"`) {
				if started++; started == 2 {
					waitReady(t, layout, 2)
					cancel()
				}
			}
		}
	}()
	var out bytes.Buffer
	begin := time.Now()
	sum, err := Execute(ctx, runs, layout, Options{Jobs: 2, Exec: Child{Path: self, Grace: 20 * time.Second}, Stdout: &out, Events: pw})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("stopping took %v: the children did not get SIGTERM", took)
	}
	if sum.Ran != 0 || sum.Interrupted != 3 {
		t.Fatalf("ran %d, interrupted %d; want 0 and 3", sum.Ran, sum.Interrupted)
	}
	if n := strings.Count(out.String(), "stopped by SIGTERM"); n != 2 {
		t.Errorf("%d result lines from stopped runs, want 2:\n%s", n, out.String())
	}
	if recs, _ := os.ReadDir(RecordsDir(layout.Out)); len(recs) != 0 {
		t.Errorf("interrupted runs left records: %v", recs)
	}
	// Two stopped while running, one never started: all three are named,
	// in expansion order, and the batch ends interrupted (exit 130).
	if want := []string{runs[0].ID, runs[1].ID, runs[2].ID}; !slices.Equal(sum.InterruptedRuns, want) {
		t.Errorf("interrupted runs %v, want %v", sum.InterruptedRuns, want)
	}
	res := sum.Result("b", layout, Shard{})
	if res.Failure == nil || res.Failure.Category != result.Interrupted || result.ExitCode(res.Failure) != 130 {
		t.Errorf("batch result failure %+v, want interrupted (exit 130)", res.Failure)
	}
	if got := res.Metadata["batch"].(map[string]any)["interrupted_runs"]; !slices.Equal(got.([]string), sum.InterruptedRuns) {
		t.Errorf("metadata.batch.interrupted_runs = %v", got)
	}

	// Resumed with the real child: every run is redone, in fresh dirs.
	t.Setenv(fakeChildEnv, "real")
	out.Reset()
	sum, err = Execute(context.Background(), runs, layout, Options{Jobs: 2, Exec: Child{Path: self}, Stdout: &out, PvisorVersion: "9.9.9-test"})
	if err != nil || sum.Ran != 3 || sum.Failed != 0 {
		t.Fatalf("resume: %+v %v\n%s", sum, err, out.String())
	}
	if v := sum.Result("b", layout, Shard{}).Metadata["batch"].(map[string]any)["pvisor_version"]; v != "9.9.9-test" {
		t.Errorf("the batch's line says pvisor %v, want 9.9.9-test", v)
	}
	for _, r := range runs {
		rec, ok := ReadRecord(filepath.Join(RecordsDir(layout.Out), r.ID+".json"))
		if !ok {
			t.Fatalf("no record for %s", r.ID)
		}
		if rec.PvisorVersion != "9.9.9-test" {
			t.Errorf("%s: record says pvisor %q, want the batch's 9.9.9-test", r.ID, rec.PvisorVersion)
		}
		var res result.Result
		if err := json.Unmarshal(rec.Result, &res); err != nil || res.Phase == nil || *res.Phase != result.PhasePrepared || res.AfterStep != r.AfterStep {
			t.Errorf("%s: result %s (%v)", r.ID, rec.Result, err)
		}
	}
}

// waitReady waits until n fake children have their SIGTERM handler in place.
func waitReady(t *testing.T, l Layout, n int) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		logs, _ := filepath.Glob(filepath.Join(filepath.Dir(l.log("x")), "*.log"))
		ready := 0
		for _, f := range logs {
			if data, _ := os.ReadFile(f); bytes.Contains(data, []byte("ready")) {
				ready++
			}
		}
		if ready >= n {
			return
		}
	}
	t.Errorf("the fake children never became ready")
}

func TestRunIDsAreStableAndSettingSensitive(t *testing.T) {
	_, a := codexSpec(t, replay.PrepareOnly, Steps{List: []int{1, 3}}, 2)
	_, b := codexSpec(t, replay.PrepareOnly, Steps{List: []int{1, 3}}, 2)
	_, c := codexSpec(t, replay.ReplayOnly, Steps{List: []int{1, 3}}, 2)
	ids := map[string]bool{}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Errorf("run %d: id %s then %s for the same file", i, a[i].ID, b[i].ID)
		}
		if a[i].ID == c[i].ID {
			t.Errorf("run %d: id %s unchanged after changing the mode", i, a[i].ID)
		}
		ids[a[i].ID] = true
	}
	if len(ids) != 4 {
		t.Errorf("ids not unique: %v", ids)
	}
}
