package pi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

func newSession(t *testing.T, env trajectory.ToolEnv) *session {
	t.Helper()
	s, err := New().(trajectory.Replayer).NewToolSession(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*session)
}

func exec1(t *testing.T, s *session, name, args, recorded string) trajectory.Fresh {
	t.Helper()
	c := &trajectory.ToolCall{ID: "c_" + name, Name: name, Arguments: json.RawMessage(args)}
	if recorded != "" {
		c.Observation = &trajectory.Observation{Content: recorded}
	}
	f, err := s.Execute(context.Background(), 1, c)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return f
}

// TestBashFullOutput: a cut output names a pi-bash-*.log in TMPDIR that
// holds all of it, and the call's log is under LogDir. Which lines are
// kept depends on the release: before 0.75.5 the final newline counted as
// an empty last line.
func TestBashFullOutput(t *testing.T) {
	for release, first := range map[string]string{"0.73.1": "502\n", "1.6.0": "501\n"} {
		t.Run(release, func(t *testing.T) {
			ws := t.TempDir()
			env := toolEnv(t, ws, "")
			env.Version = release
			s := newSession(t, env)
			f := exec1(t, s, "bash", `{"command":"seq 1 2500"}`, "")
			path := gjson.GetBytes(f.Native, "fullOutputPath").Str
			if !strings.HasPrefix(path, envValue(env.Env, "TMPDIR")+"/pi-bash-") || !strings.HasSuffix(f.Content, "Full output: "+path+"]") {
				t.Fatalf("full output path %q / text tail %q", path, f.Content[len(f.Content)-80:])
			}
			full, err := os.ReadFile(path)
			if err != nil || strings.Count(string(full), "\n") != 2500 {
				t.Fatalf("full output file: %d lines, %v", strings.Count(string(full), "\n"), err)
			}
			if !strings.HasPrefix(f.LogPath, env.LogDir) || f.ExitCode == nil || *f.ExitCode != 0 {
				t.Errorf("log %q exit %v", f.LogPath, f.ExitCode)
			}
			if log, _ := os.ReadFile(f.LogPath); string(log) != string(full) {
				t.Errorf("the call's log is not the full output")
			}
			if !strings.HasPrefix(f.Content, first) {
				t.Errorf("kept tail starts with %q, want %q", f.Content[:10], first)
			}
		})
	}
}

// TestBashNoCarryOver: pi runs every command in a fresh shell in the
// session cwd; with the recorded cwd equal to the workspace nothing is
// mapped. A call without a timeout gets the engine's default.
func TestBashNoCarryOver(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := toolEnv(t, ws, ws)
	env.DefaultTimeout = 300 * time.Millisecond
	s := newSession(t, env)
	if f := exec1(t, s, "bash", `{"command":"cd d && export X=1 && pwd"}`, ""); f.Content != ws+"/d\n" {
		t.Errorf("pwd = %q", f.Content)
	}
	if f := exec1(t, s, "bash", `{"command":"pwd; echo ${X:-unset}"}`, ""); f.Content != ws+"\nunset\n" {
		t.Errorf("second call = %q", f.Content)
	}
	f := exec1(t, s, "bash", `{"command":"sleep 3"}`, "")
	if !f.IsError || f.Content != "Command timed out after 0.3 seconds" || string(f.Native) != "{}" {
		t.Errorf("default timeout: %q %v %s", f.Content, f.IsError, f.Native)
	}
	if f.Duration > 2*time.Second {
		t.Errorf("timeout took %v", f.Duration)
	}
}

// TestPathMapping: absolute paths under the recorded cwd, in arguments
// and inside commands, reach the workspace; messages show the recorded
// paths.
func TestPathMapping(t *testing.T) {
	ws := t.TempDir()
	s := newSession(t, toolEnv(t, ws, "/rec/proj"))
	if f := exec1(t, s, "write", `{"path":"/rec/proj/a/b.txt","content":"hi"}`, ""); f.Content != "Successfully wrote to /rec/proj/a/b.txt" {
		t.Fatalf("write: %q", f.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a", "b.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("file not in the workspace: %q %v", b, err)
	}
	if f := exec1(t, s, "bash", `{"command":"cat /rec/proj/a/b.txt; ls /rec/projx 2>/dev/null; echo \"/rec/proj\""}`, ""); f.Content != "hi"+ws+"\n" {
		t.Errorf("bash: %q", f.Content)
	}
	if f := exec1(t, s, "read", `{"path":"missing"}`, ""); f.Content != "ENOENT: no such file or directory, access '/rec/proj/missing'" {
		t.Errorf("read: %q", f.Content)
	}
	if f := exec1(t, s, "ls", `{"path":"/rec/proj/a"}`, ""); f.Content != "b.txt" {
		t.Errorf("ls: %q", f.Content)
	}
}

// TestLegacyWording: results recorded by older pi releases are
// regenerated in their wording, chosen from the recorded text.
func TestLegacyWording(t *testing.T) {
	ws := t.TempDir()
	env := toolEnv(t, ws, "")
	env.Version = "0.73.1" // the oldest oracle release: no patch in edit details
	s := newSession(t, env)
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := exec1(t, s, "edit", `{"path":"f.txt","oldText":"one","newText":"uno!"}`, "Successfully replaced text in f.txt. Changed 3 characters to 4 characters.")
	if f.Content != "Successfully replaced text in f.txt. Changed 3 characters to 4 characters." || string(f.Native) != `{"diff":"-1 one\n+1 uno!\n 2 two"}` {
		t.Errorf("pi 0.13 edit: %q %s", f.Content, f.Native)
	}
	f = exec1(t, s, "edit", `{"path":"f.txt","oldText":"two","newText":"dos"}`, "Successfully replaced text in f.txt.")
	if f.Content != "Successfully replaced text in f.txt." || string(f.Native) != `{"diff":" 1 uno!\n-2 two\n+2 dos","firstChangedLine":2}` {
		t.Errorf("pi 0.50 edit: %q %s", f.Content, f.Native)
	}
	if f = exec1(t, s, "edit", `{"path":"g.txt","oldText":"a","newText":"b"}`, "File not found: g.txt"); f.Content != "File not found: g.txt" || !f.IsError {
		t.Errorf("old missing-file text: %q", f.Content)
	}
	if f = exec1(t, s, "read", `{"path":"f.txt","limit":1}`, "uno!\n\n[2 more lines in file. Use offset=2 to continue]"); f.Content != "uno!\n\n[2 more lines in file. Use offset=2 to continue]" {
		t.Errorf("pi 0.13 read notice: %q", f.Content)
	}
	if f = exec1(t, s, "bash", `{"command":"exit 1"}`, "Command exited with code 1"); f.Content != "Command exited with code 1" || !f.IsError {
		t.Errorf("old empty failure: %q", f.Content)
	}
}

// TestSearchFallbacks: without fd and rg on PATH, find and grep still
// give pi's output for simple trees (the golden cases, where they agree).
func TestSearchFallbacks(t *testing.T) {
	want := map[string]string{}
	data, err := os.ReadFile(goldenTools("0.73.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		o := gjson.Parse(line)
		want[o.Get("tool").Str+" "+o.Get("args").Raw] = o.Get("content").Str
	}
	ws := t.TempDir()
	toolFixture(t, ws)
	env := toolEnv(t, ws, fakeCwd)
	env.Env = []string{"PATH=/nonexistent", "HOME=" + t.TempDir()}
	s := newSession(t, env)
	for _, c := range []struct{ tool, args string }{
		{"find", `{"pattern":"*.py"}`},
		{"find", `{"pattern":"**/*.py"}`},
		{"find", `{"pattern":"sub/**/*.py"}`},
		{"find", `{"pattern":"only"}`},
		{"find", `{"pattern":"*.zzz"}`},
		{"find", `{"pattern":"*.py","path":"sub"}`},
		{"grep", `{"pattern":"return","context":1}`},
		{"grep", `{"pattern":"HELLO","ignoreCase":true,"path":"hello.txt"}`},
		{"grep", `{"pattern":"line","path":"big.txt","limit":2}`},
		{"grep", `{"pattern":"zzzz"}`},
		{"grep", `{"pattern":"x","path":"nope"}`},
	} {
		w, ok := want[c.tool+" "+c.args]
		if !ok {
			t.Fatalf("no golden for %s %s", c.tool, c.args)
		}
		if f := exec1(t, s, c.tool, c.args, ""); normalize(f.Content, ws, "") != w {
			t.Errorf("%s %s: %q, want %q", c.tool, c.args, f.Content, w)
		}
	}
	if s.tools["fd"] != "" || s.tools["rg"] != "" {
		t.Fatalf("fd/rg found on an empty PATH: %v", s.tools)
	}
}

// TestExecuteCanceled: a cancelled context is a pvisor failure, not a
// tool result.
func TestExecuteCanceled(t *testing.T) {
	s := newSession(t, toolEnv(t, t.TempDir(), ""))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Execute(ctx, 1, &trajectory.ToolCall{ID: "c", Name: "bash", Arguments: json.RawMessage(`{"command":"sleep 5"}`)})
	if err == nil {
		t.Fatal("no error for a cancelled call")
	}
}

// TestContainerView: under --executor container (a container view set),
// read, write and ls of absolute paths outside the workspace reach the
// container's root, not this host's, and show the path the call named;
// the workspace stays where it is.
func TestContainerView(t *testing.T) {
	ws, root := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "pvisor-probe"), []byte("in the container\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release, err := run.SetContainerView(root, []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	s := newSession(t, toolEnv(t, ws, ws))
	if f := exec1(t, s, "read", `{"path":"/etc/pvisor-probe"}`, ""); f.Content != "in the container\n" {
		t.Errorf("read: %q", f.Content)
	}
	if f := exec1(t, s, "write", `{"path":"/opt/x/new.txt","content":"hi"}`, ""); f.Content != "Successfully wrote to /opt/x/new.txt" {
		t.Errorf("write: %q", f.Content)
	}
	if b, err := os.ReadFile(filepath.Join(root, "opt", "x", "new.txt")); err != nil || string(b) != "hi" {
		t.Errorf("the write did not land in the container's root: %q %v", b, err)
	}
	if _, err := os.Stat("/opt/x/new.txt"); err == nil {
		t.Error("the write reached the host's /opt")
	}
	if f := exec1(t, s, "ls", `{"path":"/etc"}`, ""); f.Content != "pvisor-probe" {
		t.Errorf("ls: %q", f.Content)
	}
	if f := exec1(t, s, "write", `{"path":"`+ws+`/w.txt","content":"ws"}`, ""); f.IsError {
		t.Errorf("workspace write: %q", f.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "w.txt")); err != nil || string(b) != "ws" {
		t.Errorf("workspace file: %q %v", b, err)
	}
}
