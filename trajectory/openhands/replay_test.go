package openhands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// generated is a real V1 conversation written by openhands-sdk 1.58.2's
// own agent, terminal and file editor (generate_ohsdk-1.58.2.py) in
// /tmp/ohgen/ws.
const generated = corpusDir + "/ohsdk_generated_1.58.2.jsonl"

// replayAll re-runs steps 1..upTo of tr in a new workspace and returns the
// fresh results by call id, with the workspace path shown as the recorded
// one (as the engine's comparison maps it).
func replayAll(t *testing.T, tr *trajectory.Trajectory, upTo int) (map[string]trajectory.Fresh, string) {
	t.Helper()
	ws := t.TempDir()
	s, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{
		Workspace: ws, OriginalCwd: tr.Cwd, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8"},
		LogDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fresh := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		if a.Step > upTo {
			break
		}
		for i := range a.Calls {
			f, err := s.Execute(context.Background(), a.Step, &a.Calls[i])
			if err != nil {
				t.Fatalf("step %d %s: %v", a.Step, a.Calls[i].Name, err)
			}
			fresh[a.Calls[i].ID] = f
		}
	}
	return fresh, ws
}

// Every command and edit of the real conversation gives back, here, the
// text OpenHands' own tools returned.
func TestReplayV1MatchesRecorded(t *testing.T) {
	_, tr := formattest.DecodeFile(t, New(), generated)
	if tr.Cwd != "/tmp/ohgen/ws" {
		t.Fatalf("recorded cwd %q", tr.Cwd)
	}
	last := len(tr.Steps()) - 1 // the final step is finish
	if stale := trajectory.CheckPrefixTools(New(), tr, last); len(stale) != 0 {
		t.Fatalf("stale calls: %v", stale)
	}
	fresh, ws := replayAll(t, tr, last)
	for _, a := range tr.Steps()[:last] {
		for _, c := range a.Calls {
			f := fresh[c.ID]
			got := strings.ReplaceAll(f.Content, ws, tr.Cwd)
			if d := cmp.Diff(c.Observation.Content, got); d != "" {
				t.Errorf("step %d %s %s (-recorded +fresh):\n%s", a.Step, c.Name, c.Arguments, d)
			}
			if f.IsError != c.Observation.IsError {
				t.Errorf("step %d %s: fresh error %v, recorded %v", a.Step, c.Name, f.IsError, c.Observation.IsError)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "src", "x.txt")); err != nil || string(b) != "alpha\nBETA\ngamma\n" {
		t.Errorf("x.txt = %q, %v", b, err)
	}
}

// The rebuilt events are the prefix with each result's text, error flag and
// exit code replaced; the rest of every line is unchanged.
func TestRebuildV1(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), generated)
	fresh := map[string]trajectory.Fresh{}
	code := 3
	fresh["call_9"] = trajectory.Fresh{Content: "/w/src\nboom", IsError: true, ExitCode: &code, Native: nativeFields(false, &code)}
	fresh["call_7"] = trajectory.Fresh{Content: "edited", Native: nativeFields(false, nil)}
	fresh["call_1"] = trajectory.Fresh{Content: "ignored", Reused: true}
	var prefix, rebuilt bytes.Buffer
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 9); err != nil {
		t.Fatal(err)
	}
	if err := New().(trajectory.Replayer).Rebuild(&rebuilt, bytes.NewReader(data), int64(len(data)), tr, 9, fresh); err != nil {
		t.Fatal(err)
	}
	pl, rl := strings.Split(prefix.String(), "\n"), strings.Split(rebuilt.String(), "\n")
	if len(pl) != len(rl) {
		t.Fatalf("%d lines rebuilt, %d in the prefix", len(rl), len(pl))
	}
	for i := range pl {
		switch i + 1 {
		case 16, 20: // the results of call_7 and call_9
			continue
		}
		if pl[i] != rl[i] {
			t.Errorf("line %d changed:\n%s\n%s", i+1, pl[i], rl[i])
		}
	}
	o := gjson.Parse(rl[19]).Get("observation")
	if o.Get("content.0.text").Str != "/w/src\nboom" || o.Get("exit_code").Int() != 3 || o.Get("metadata.exit_code").Int() != 3 ||
		o.Get("is_error").Bool() || !o.Get("content.0.cache_prompt").Exists() {
		t.Errorf("rebuilt command result = %s", o.Raw)
	}
	o = gjson.Parse(rl[15]).Get("observation")
	if o.Get("content.0.text").Str != "edited" || o.Get("is_error").Bool() {
		t.Errorf("rebuilt edit result = %s", o.Raw)
	}
	// The rebuilt file decodes to the same steps with the fresh results.
	rt, err := New().Decode(bytes.NewReader(rebuilt.Bytes()), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rt.Actions[8].Calls[0]; c.Observation.Content != "/w/src\nboom" || !c.Observation.IsError || len(rt.Steps()) != 9 {
		t.Errorf("rebuilt step 9 = %+v", c.Observation)
	}
}

// The editor's error texts and edge cases, checked against what
// openhands-tools returns for the same calls.
func TestEditorErrors(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(f, []byte("one\r\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	var ed editor
	tests := []struct {
		a    editArgs
		want string
	}{
		{editArgs{Command: "view", Path: "a.txt"}, "Invalid `path` parameter: a.txt. The path should be an absolute path. Maybe you meant " + f + "?"},
		{editArgs{Command: "create", Path: f, FileText: str("x")}, "Invalid `path` parameter: " + f + ". File already exists at: " + f + ". Cannot overwrite files using command `create`."},
		{editArgs{Command: "view", Path: f + "x"}, "Invalid `path` parameter: " + f + "x. The path " + f + "x does not exist. Please provide a valid path."},
		{editArgs{Command: "insert", Path: dir, InsertLine: num(0), NewStr: str("x")}, "Invalid `path` parameter: " + dir + ". The path " + dir + " is a directory and only the `view` command can be used on directories."},
		{editArgs{Command: "str_replace", Path: f, OldStr: str("three"), NewStr: str("3")}, "No replacement was performed, old_str `three` did not appear verbatim in " + f + "."},
		{editArgs{Command: "str_replace", Path: f, OldStr: str("x"), NewStr: str("x")}, "Invalid `new_str` parameter: x. No replacement was performed. `new_str` and `old_str` must be different."},
		{editArgs{Command: "str_replace", Path: f, NewStr: str("x")}, "Parameter `old_str` is required for command: str_replace."},
		{editArgs{Command: "insert", Path: f, InsertLine: num(5), NewStr: str("x")}, "Invalid `insert_line` parameter: 5. It should be within the range of allowed values: [0, 2]"},
		{editArgs{Command: "view", Path: f, ViewRange: []int{3, 4}}, "Invalid `view_range` parameter: [3, 4]. Its first element `3` should be within the range of lines of the file: [1, 2]."},
		{editArgs{Command: "undo_edit", Path: f}, "No edit history found for " + f + "."},
		// Universal newlines: \r\n reads as \n.
		{editArgs{Command: "view", Path: f, ViewRange: []int{1, 9}}, "NOTE: We only show up to 2 since there're only 2 lines in this file.\nHere's the result of running `cat -n` on " + f + ":\n     1\tone\n     2\ttwo\n"},
	}
	for _, tt := range tests {
		out, err := ed.run(tt.a, dir)
		got := out
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tt.a.Command, tt.a.Path, got, tt.want)
		}
	}
}

// Paths outside the workspace, directly or through a symbolic link, are
// error results; nothing is written there.
func TestEditorConfined(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: "/work", Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, p := range []string{outside + "/a.txt", "/work/link/b.txt", "/work/../etc/c.txt"} {
		call := trajectory.ToolCall{ID: "c", Name: ToolFileEditor, Arguments: []byte(`{"command":"create","path":"` + p + `","file_text":"x"}`)}
		f, err := s.Execute(context.Background(), i+1, &call)
		if err != nil {
			t.Fatal(err)
		}
		if !f.IsError || !strings.Contains(f.Content, "outside the workspace") {
			t.Errorf("%s: %+v", p, f)
		}
	}
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Errorf("wrote outside the workspace: %v", names)
	}
	// Inside, through the recorded cwd, it works.
	call := trajectory.ToolCall{ID: "c", Name: ToolFileEditor, Arguments: []byte(`{"command":"create","path":"/work/ok.txt","file_text":"x"}`)}
	if f, err := s.Execute(context.Background(), 4, &call); err != nil || f.IsError {
		t.Errorf("inside: %+v %v", f, err)
	}
}

// Long results keep their head and tail around OpenHands' notice; these
// expectations are openhands.sdk.utils.truncate.maybe_truncate's output.
func TestMaybeTruncate(t *testing.T) {
	tests := []struct {
		in     string
		limit  int
		notice string
		want   string
	}{
		{"short", 10, "<N>", "short"},
		{"0123456789", 9, "<N>", "012<N>789"},
		{"0123456789", 8, "<N>", "012<N>89"},
		{"ééééé", 4, "<N>", "é<N>"},
		{"0123456789", 3, "<NOTE>", "<NO"},
	}
	for _, tt := range tests {
		if got := maybeTruncate(tt.in, tt.limit, tt.notice); got != tt.want {
			t.Errorf("maybeTruncate(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

// makeBigTree is the tree testdata/editor/gen.py ran openhands-tools'
// FileEditor on: a 3000-line file and 30 directories (views past the
// 16000-character limit), and a hidden file.
func makeBigTree(t *testing.T, root string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		b.WriteString("line " + strconv.Itoa(i) + " " + strings.Repeat("x", i%7) + "\n")
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "big.txt"), []byte(b.String()), 0o644))
	for i := 0; i < 30; i++ {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i))
		must(os.MkdirAll(filepath.Join(d, "sub"), 0o755))
		must(os.WriteFile(filepath.Join(d, "f.txt"), []byte("x"), 0o644))
	}
	must(os.WriteFile(filepath.Join(root, ".hidden"), []byte("h"), 0o644))
}

// The editor's texts for long files and directories (clipped at 16000
// characters), ranges to the end, replacements and inserts with their
// snippets equal what openhands-tools 1.58.2's FileEditor returned.
func TestEditorMatchesOpenHands(t *testing.T) {
	raw, err := os.ReadFile("testdata/editor/editor_big.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	makeBigTree(t, root)
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	big := filepath.Join(root, "big.txt")
	var ed editor
	steps := []struct {
		name string
		a    editArgs
	}{
		{"view", editArgs{Command: "view", Path: big}},
		{"range", editArgs{Command: "view", Path: big, ViewRange: []int{2990, -1}}},
		{"dir", editArgs{Command: "view", Path: root}},
		{"replace", editArgs{Command: "str_replace", Path: big, OldStr: str("line 1500 xx\n"), NewStr: str("LINE\nFIFTEEN\n")}},
		{"insert0", editArgs{Command: "insert", Path: big, InsertLine: num(0), NewStr: str("top")}},
	}
	for _, st := range steps {
		got, err := ed.run(st.a, root)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got = strings.ReplaceAll(got, root, "/tmp/edchk/big")
		if d := cmp.Diff(want[st.name], got); d != "" {
			t.Errorf("%s (-openhands +ours):\n%s", st.name, d)
		}
	}
}

// A V0 rebuild replaces each result's content and exit code (and success)
// in place; the rebuilt array decodes to the fresh results.
func TestRebuildV0(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), corpusDir+"/ohands_trajs_wrong_initial_state.json")
	steps := tr.Steps()
	code := 2
	fresh := map[string]trajectory.Fresh{}
	for _, a := range steps {
		for _, c := range a.Calls {
			f := trajectory.Fresh{Content: "fresh " + c.ID, Native: nativeFields(false, nil)}
			if c.Name == ActionRun {
				f = trajectory.Fresh{Content: "mv: cannot stat", IsError: true, ExitCode: &code, Native: nativeFields(false, &code)}
			}
			fresh[c.ID] = f
		}
	}
	var prefix, rebuilt bytes.Buffer
	n := len(steps)
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
		t.Fatal(err)
	}
	if err := New().(trajectory.Replayer).Rebuild(&rebuilt, bytes.NewReader(data), int64(len(data)), tr, n, fresh); err != nil {
		t.Fatal(err)
	}
	rt, err := New().Decode(bytes.NewReader(rebuilt.Bytes()), trajectory.Options{})
	if err != nil {
		t.Fatalf("rebuilt does not decode: %v", err)
	}
	for i, a := range rt.Steps() {
		for j, c := range a.Calls {
			f := fresh[c.ID]
			if c.Observation.Content != f.Content || c.Observation.IsError != f.IsError {
				t.Errorf("step %d: rebuilt result %q %v, want %q %v", i+1, c.Observation.Content, c.Observation.IsError, f.Content, f.IsError)
			}
			if d := cmp.Diff(steps[i].Calls[j].Arguments, c.Arguments); d != "" {
				t.Errorf("step %d: arguments changed:\n%s", i+1, d)
			}
		}
	}
	if !bytes.Contains(rebuilt.Bytes(), []byte(`"exit_code": 2`)) {
		t.Error("the command's exit code was not rewritten")
	}
	if prefix.Len() == rebuilt.Len() {
		t.Error("nothing was rewritten")
	}
}
