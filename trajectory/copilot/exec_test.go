package copilot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"os/exec"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// needRipgrep skips a test whose grep or glob calls run ripgrep, as Copilot
// does, on a machine without it (.ci/run installs it).
func needRipgrep(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("copilot's grep and glob run ripgrep: install ripgrep (apt-get install ripgrep)")
	}
}

func newSession(t *testing.T) (trajectory.ToolSession, string) {
	t.Helper()
	ws := t.TempDir()
	ts, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: "/orig/repo",
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts, ws
}

func exec1(t *testing.T, ts trajectory.ToolSession, name, args string) trajectory.Fresh {
	t.Helper()
	f, err := ts.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "c", Name: name, Arguments: []byte(args)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The shell carries its directory over, results are trimmed and end with
// the shell's id (counted from 0) and exit code.
func TestBash(t *testing.T) {
	ts, _ := newSession(t)
	if f := exec1(t, ts, "bash", `{"command":"mkdir d && cd d && printf '  x\n\n'"}`); f.Content != "x\n<shellId: 0 completed with exit code 0>" {
		t.Errorf("first = %q", f.Content)
	}
	if f := exec1(t, ts, "bash", `{"command":"basename \"$PWD\"; exit 3"}`); f.Content != "d\n<shellId: 1 completed with exit code 3>" || *f.ExitCode != 3 {
		t.Errorf("second = %q", f.Content)
	}
	if f := exec1(t, ts, "bash", `{"command":"true"}`); f.Content != "\n<shellId: 2 completed with exit code 0>" {
		t.Errorf("silent = %q", f.Content)
	}
}

// File tools map the recorded cwd to the workspace but name the path as the
// model wrote it.
func TestFileTools(t *testing.T) {
	needRipgrep(t)
	ts, ws := newSession(t)
	if f := exec1(t, ts, "create", `{"path":"/orig/repo/a/n.md","file_text":"hé\n"}`); f.Content != "Created file /orig/repo/a/n.md with 3 characters" || f.IsError {
		t.Errorf("create = %+v", f)
	}
	if f := exec1(t, ts, "create", `{"path":"/orig/repo/a/n.md","file_text":""}`); !f.IsError {
		t.Errorf("create over a file = %+v", f)
	}
	if f := exec1(t, ts, "edit", `{"path":"/orig/repo/a/n.md","old_str":"é","new_str":"e"}`); f.Content != "File /orig/repo/a/n.md updated with changes." {
		t.Errorf("edit = %+v", f)
	}
	if f := exec1(t, ts, "edit", `{"path":"/orig/repo/a/n.md","old_str":"zz","new_str":"e"}`); !f.IsError {
		t.Errorf("edit without match = %+v", f)
	}
	if f := exec1(t, ts, "view", `{"path":"a/n.md"}`); f.Content != "he\n" {
		t.Errorf("view = %+v", f)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a", "n.md")); string(b) != "he\n" {
		t.Errorf("file = %q", b)
	}
	if f := exec1(t, ts, "grep", `{"pattern":"he","path":"/orig/repo","output_mode":"content","-n":true}`); f.Content != "/orig/repo/a/n.md:1:he" {
		t.Errorf("grep = %q", f.Content)
	}
	if f := exec1(t, ts, "glob", `{"pattern":"**/*.md"}`); f.Content != "./a/n.md" {
		t.Errorf("glob = %q", f.Content)
	}
}

// A rebuilt result carries the fresh content and success; an unchanged one
// keeps its bytes.
func TestRebuild(t *testing.T) {
	src := lines(start, call, result, `{"type":"assistant.turn_end","data":{"turnId":"0"}}`)
	tr, err := New().Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := New().(trajectory.Replayer)
	var same, changed bytes.Buffer
	if err := r.Rebuild(&same, strings.NewReader(src), int64(len(src)), tr, 1, map[string]trajectory.Fresh{"c1": {Content: "ok"}}); err != nil {
		t.Fatal(err)
	}
	if same.String() != src {
		t.Errorf("unchanged rebuild differs:\n%s", same.String())
	}
	code := 2
	if err := r.Rebuild(&changed, strings.NewReader(src), int64(len(src)), tr, 1,
		map[string]trajectory.Fresh{"c1": {Content: "new\n", IsError: true, ExitCode: &code}}); err != nil {
		t.Fatal(err)
	}
	line := strings.Split(changed.String(), "\n")[2]
	if v := gjson.Get(line, "data"); v.Get("error.message").Str != "new\n" || v.Get("error.code").Str != "failure" ||
		v.Get("result").Exists() || v.Get("success").Bool() || v.Get("toolCallId").Str != "c1" {
		t.Errorf("rebuilt line = %s", line)
	}
}

// The probe session (failures, a directory, a line range, parallel shells,
// searches without a match) replays call by call in a copy of its repo with
// every observation equal once shell ids are masked.
func TestReplayProbe(t *testing.T) {
	needRipgrep(t)
	_, tr := formattest.DecodeFile(t, New(), corpusDir+"/generated_copilot-1.0.102_probe-failures.jsonl")
	ts, ws := newSession(t)
	ts.Close()
	rt, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: "/tmp/cprobe/repo",
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if out, err := exec.Command("tar", "-xzf", "../../testdata/e2e/sessions/copilot@1.0.102/repo.tar.gz", "-C", ws).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	n := New().(trajectory.Normalizer)
	calls := 0
	for _, a := range tr.Steps() {
		for i := range a.Calls {
			c := &a.Calls[i]
			f, err := rt.Execute(context.Background(), a.Step, c)
			if err != nil {
				t.Fatal(err)
			}
			if n.NormalizeObservation(f.Content) != n.NormalizeObservation(c.Observation.Content) || f.IsError != c.Observation.IsError {
				t.Errorf("step %d %s %s: got %q (error %v), recorded %q (error %v)", a.Step, c.Name, c.Arguments,
					f.Content, f.IsError, c.Observation.Content, c.Observation.IsError)
			}
			calls++
		}
	}
	if calls != 10 {
		t.Errorf("%d calls replayed, want the probe's 10", calls)
	}
}
