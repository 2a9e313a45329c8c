package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

// call builds a function call; out is its recorded result ("" for none).
func call(name, args, out string) *trajectory.ToolCall {
	c := &trajectory.ToolCall{ID: "call_" + name, Name: name, Arguments: json.RawMessage(args)}
	if out != "" {
		c.Observation = &trajectory.Observation{Content: out}
	}
	return c
}

// custom builds a freeform apply_patch call.
func custom(patch string) *trajectory.ToolCall {
	b, _ := json.Marshal(patch)
	return &trajectory.ToolCall{ID: "call_patch", Name: ToolApplyPatch, Arguments: b}
}

type step struct {
	call *trajectory.ToolCall
	want string // exact native text after normalize(); "~re" is a regexp
	err  bool   // want IsError
}

// runSteps executes the steps in one session on a workspace holding the
// greeter files, with the given version and recorded cwd.
func runSteps(t *testing.T, version, orig string, steps []step) string {
	t.Helper()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"README.md":       "# Greeter\n\nA tiny greeter. It prints a greting.\n",
		"greeter/util.py": "def greet(name):\n    return \"hi \" + name\n",
	})
	if orig == "" {
		orig = ws
	}
	ts, err := NewToolSessionVersion(toolEnv(t, ws, orig), version)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, s := range steps {
		f, err := ts.Execute(ctx, i+1, s.call)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, s.call.Name, err)
		}
		got := normalize(f.Content)
		if re, ok := strings.CutPrefix(s.want, "~"); ok {
			if !regexp.MustCompile("^(?s:" + re + ")$").MatchString(got) {
				t.Errorf("step %d (%s): got %q, want match of %q", i+1, s.call.Name, got, re)
			}
		} else if d := cmp.Diff(measured.ReplaceAllString(s.want, measuredMask), measured.ReplaceAllString(got, measuredMask)); d != "" {
			t.Errorf("step %d (%s) (-want +got):\n%s", i+1, s.call.Name, d)
		}
		if f.IsError != s.err {
			t.Errorf("step %d (%s): IsError = %v, want %v", i+1, s.call.Name, f.IsError, s.err)
		}
	}
	return ws
}

const execHead = "Chunk ID: <random>\nWall time: <measured> seconds\n"

// measured is the legacy shell's measured duration: 0.0 on a quiet machine,
// a tenth or two on a busy one, so exact comparisons mask it.
var measured = regexp.MustCompile(`"duration_seconds":[0-9]+(\.[0-9]+)?`)

const measuredMask = `"duration_seconds":<measured>`

func TestExecCommand(t *testing.T) {
	seq := func(from, to int, sep string) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "%d%s", i, sep)
		}
		return b.String()
	}
	all := seq(1, 3000, "\n") // 13893 bytes, 3474 tokens
	cut := all[:200] + "…3374 tokens truncated…" + all[len(all)-200:]
	tests := []struct {
		name, version string
		steps         []step
	}{
		{"exit code and merged stderr", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"printf 'out\\n'; printf 'err\\n' >&2; exit 3"}`, ""),
			want: execHead + "Process exited with code 3\nOriginal token count: 2\nOutput:\nout\nerr\n", err: true}}},
		{"relative workdir, codex env", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"ls; echo $TERM $PAGER $CODEX_CI $NO_COLOR","workdir":"greeter"}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 6\nOutput:\nutil.py\ndumb cat 1 1\n"}}},
		{"lossy utf-8 counts raw bytes", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"printf 'a\\xffb\\ncaf\\xc3'"}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 2\nOutput:\na\uFFFDb\ncaf\uFFFD"}}},
		{"missing workdir", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"ls","workdir":"nope"}`, ""),
			want: `exec_command failed: CreateProcess { message: "Rejected(\"Failed to create unified exec process: No such file or directory (os error 2)\")" }`,
			err:  true}}},
		{"truncation 0.171", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"seq 1 3000","max_output_tokens":100}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 3474\nOutput:\n" +
				"Warning: truncated output (original token count: 3474)\nTotal output lines: 3000\n\n" + cut}}},
		{"truncation 0.125", "0.125.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"seq 1 3000","max_output_tokens":100}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 3474\nOutput:\nTotal output lines: 3000\n\n" + cut}}},
		{"over the 1 MiB buffer (codex 0.171 run by hand)", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"head -c 3000000 /dev/zero | tr '\\0' a","max_output_tokens":100}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 750000\nOutput:\n" +
				"Warning: truncated output (original token count: 750000)\n... 1951424 bytes omitted ...\n\n" +
				strings.Repeat("a", 200) + "…262052 tokens truncated…" + strings.Repeat("a", 200)}}},
		{"budget is capped at 10000 tokens", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"seq 1 3000","max_output_tokens":50000}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 3474\nOutput:\n" + all}}},
		{"tty session with recorded id", "0.171.0", []step{
			{call: call(ToolExecCommand, `{"cmd":"read -r x; echo got $x; read -r y; echo got2 $y","tty":true,"yield_time_ms":300}`,
				"Chunk ID: a\nWall time: 0.3000 seconds\nProcess running with session ID 4242\nOriginal token count: 0\nOutput:\n"),
				want: execHead + "Process running with session ID 4242\nOriginal token count: 0\nOutput:\n"},
			{call: call(ToolWriteStdin, `{"session_id":4242,"chars":"hello\n","yield_time_ms":300}`, ""),
				want: execHead + "Process running with session ID 4242\nOriginal token count: 5\nOutput:\nhello\r\ngot hello\r\n"},
			{call: call(ToolWriteStdin, `{"session_id":4242,"chars":"bye\n","yield_time_ms":2000}`, ""),
				want: execHead + "Process exited with code 0\nOriginal token count: 4\nOutput:\nbye\r\ngot2 bye\r\n"},
			{call: call(ToolWriteStdin, `{"session_id":4242,"chars":""}`, ""),
				want: "write_stdin failed: Unknown process id 4242", err: true}}},
		{"pipe session: stdin closed, poll until exit", "0.125.0", []step{
			{call: call(ToolExecCommand, `{"cmd":"sleep 0.6; echo done","yield_time_ms":250}`,
				"Chunk ID: a\nWall time: 1.0000 seconds\nProcess running with session ID 20936\nOriginal token count: 0\nOutput:\n"),
				want: execHead + "Process running with session ID 20936\nOriginal token count: 0\nOutput:\n"},
			{call: call(ToolWriteStdin, `{"session_id":20936,"chars":"\u0003"}`, ""),
				want: "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open", err: true},
			{call: call(ToolWriteStdin, `{"session_id":20936,"chars":"","yield_time_ms":1000}`, ""),
				want: execHead + "Process exited with code 0\nOriginal token count: 2\nOutput:\ndone\n"}}},
		{"recorded exit, still running here", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"sleep 5","yield_time_ms":250}`,
				"Chunk ID: a\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"),
			want: execHead + "Process running with session ID 100000\nOriginal token count: 0\nOutput:\n"}}},
		{"apply_patch heredoc", "0.171.0", []step{{
			call: call(ToolExecCommand, `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch\nEOF"}`, ""),
			want: "Wall time: <measured> seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA n.txt\n"}}},
		{"bad session id", "0.171.0", []step{{
			call: call(ToolWriteStdin, `{"session_id":"SID1","chars":"hello\n"}`, ""),
			want: `failed to parse function arguments: invalid type: string "SID1", expected i32 at line 1 column 20`, err: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.version, "", tc.steps) })
	}
}

func TestLegacyShell(t *testing.T) {
	var head, tail strings.Builder
	for i := 1; i <= 128; i++ {
		fmt.Fprintf(&head, "%d\n", i)
	}
	for i := 173; i <= 300; i++ {
		fmt.Fprintf(&tail, "\n%d", i)
	}
	cut := strings.TrimSuffix(head.String(), "\n") + "\n[... omitted 44 of 300 lines ...]\n\n" + tail.String()[1:]
	cutJSON, _ := json.Marshal(cut)
	runSteps(t, "0.40.0", "", []step{
		{call: call(ToolShell, `{"command":["bash","-lc","echo hi; echo oops >&2"]}`, ""),
			want: `{"output":"hi\noops\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`},
		{call: call(ToolShell, `{"command":["bash","-lc","cat nope"],"workdir":"greeter"}`, ""),
			want: `{"output":"cat: nope: No such file or directory\n","metadata":{"exit_code":1,"duration_seconds":0.0}}`, err: true},
		{call: call(ToolShell, `{"command":["bash","-lc","seq 1 300"]}`, ""),
			want: `{"output":` + string(cutJSON) + `,"metadata":{"exit_code":0,"duration_seconds":0.0}}`},
		{call: call(ToolShell, `{"command":["bash","-lc","ls"],"workdir":"/nonexistent/dir"}`, ""),
			want: "execution error: No such file or directory (os error 2)", err: true},
		{call: call(ToolShell, `{"command":["bash","-lc","sleep 5"],"timeout_ms":200}`,
			"failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 1, stdout: , stderr: "),
			want: "failed in sandbox MacosSeatbelt with execution error: command timed out", err: true},
		{call: call(ToolShell, `{"command":["bash","-lc","apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: README.md\n@@\n-A tiny greeter. It prints a greting.\n+A tiny greeter. It prints a greeting.\n*** End Patch\nPATCH"]}`, ""),
			want: `{"output":"Success. Updated the following files:\nM README.md\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`},
		{call: call(ToolShell, `{"command":["apply_patch","*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n"]}`, ""),
			want: "~error: Failed to read /.*/gone.txt: No such file or directory \\(os error 2\\)", err: true},
		{call: call(ToolUpdatePlan, `{"plan":[{"step":"x","status":"completed"}]}`, "Plan updated"), want: "Plan updated"},
	})
}

func TestShellCommand(t *testing.T) {
	runSteps(t, "0.60.0", "", []step{
		// Wall time is measured: 0 seconds on a quiet machine, a tenth or two on a busy one.
		{call: call(ToolShellCommand, `{"command":"echo hi"}`, ""), want: "~Exit code: 0\nWall time: 0(\\.[0-9])? seconds\nOutput:\nhi\n"},
		{call: call(ToolShellCommand, `{"command":"exit 2","login":false}`, ""), want: "~Exit code: 2\nWall time: 0(\\.[0-9])? seconds\nOutput:\n", err: true},
		{call: call(ToolShellCommand, `{"command":"echo a; sleep 5","timeout_ms":300}`, ""),
			want: "~Exit code: 124\nWall time: 0.[34] seconds\nOutput:\ncommand timed out after 3\\d\\d milliseconds\na\n", err: true},
		{call: call(ToolShellCommand, `{"command":"cd greeter && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.py\n+x = 1\n*** End Patch\nEOF"}`, ""),
			want: "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA x.py\n"},
	})
}

func TestApplyPatch(t *testing.T) {
	ok := "*** Begin Patch\n*** Add File: docs/NOTES.md\n+# Notes\n*** Update File: README.md\n@@\n-A tiny greeter. It prints a greting.\n+A tiny greeter. It prints a greeting.\n*** Delete File: greeter/util.py\n*** End Patch\n"
	summary := "Success. Updated the following files:\nA docs/NOTES.md\nM README.md\nD greeter/util.py\n"
	bad := "*** Begin Patch\n*** Add File: new1.txt\n+one\n*** Update File: README.md\n@@\n-no such line\n+y\n*** End Patch\n"
	t.Run("0.171 text", func(t *testing.T) {
		ws := runSteps(t, "0.171.0", "", []step{
			{call: custom(bad), want: "~apply_patch verification failed: Failed to find expected lines in /.*/README.md:\nno such line", err: true},
			{call: custom(ok), want: "Exit code: 0\nWall time: 0 seconds\nOutput:\n" + summary},
			{call: custom("*** Begin Patch\n*** End Patch\n"), want: "patch rejected: empty patch", err: true},
			{call: custom("garbage\n*** Begin Patch\n*** End Patch"), want: "apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'", err: true},
			{call: custom("*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch"),
				want: "~apply_patch verification failed: Failed to read file to update /.*/missing.txt: No such file or directory \\(os error 2\\)", err: true},
			{call: custom("*** Begin Patch\n*** Update File: README.md\n@@ no context\n-x\n+y\n*** End Patch"),
				want: "~apply_patch verification failed: Failed to find context 'no context' in /.*/README.md", err: true},
			{call: custom("*** Begin Patch\n*** Add File: a.txt\n+1\n*** Update File: a.txt\n@@\n-1\n+2\n*** End Patch"),
				want: "~apply_patch verification failed: invalid patch: multiple operations target /.*/a.txt", err: true},
		})
		if _, err := os.Stat(filepath.Join(ws, "new1.txt")); err == nil {
			t.Error("failed verification left new1.txt behind")
		}
	})
	t.Run("0.125 json", func(t *testing.T) {
		runSteps(t, "0.125.0", "", []step{
			{call: custom(ok), want: `{"output":"Success. Updated the following files:\nA docs/NOTES.md\nM README.md\nD greeter/util.py\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`},
			{call: call(ToolApplyPatch, `{"input":"*** Begin Patch\n*** Add File: f.txt\n+x\n*** End Patch\n"}`, ""),
				want: `{"output":"Success. Updated the following files:\nA f.txt\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`},
		})
	})
	t.Run("shape learnt from the recording", func(t *testing.T) {
		c := custom(ok)
		c.Observation = &trajectory.Observation{Content: `{"output":"Success. Updated the following files:\nA docs/NOTES.md\n","metadata":{"exit_code":0,"duration_seconds":2.2}}`}
		runSteps(t, "", "", []step{{call: c, want: `{"output":` + serdeString(summary) + `,"metadata":{"exit_code":0,"duration_seconds":0.0}}`}})
	})
}

// TestPathMapping replays calls recorded in /orig/repo in another
// workspace: arguments are mapped in, paths Codex itself writes back out.
func TestPathMapping(t *testing.T) {
	runSteps(t, "0.171.0", "/orig/repo", []step{
		{call: call(ToolExecCommand, `{"cmd":"cat /orig/repo/greeter/util.py; ls","workdir":"/orig/repo/greeter"}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 13\nOutput:\ndef greet(name):\n    return \"hi \" + name\nutil.py\n"},
		{call: custom("*** Begin Patch\n*** Add File: /orig/repo/abs.txt\n+x\n*** Update File: /orig/repo/nope.txt\n@@\n-a\n+b\n*** End Patch"),
			want: "apply_patch verification failed: Failed to read file to update /orig/repo/nope.txt: No such file or directory (os error 2)", err: true},
		{call: custom("*** Begin Patch\n*** Add File: /orig/repo/abs.txt\n+x\n*** End Patch"),
			want: "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA /orig/repo/abs.txt\n"},
		{call: call(ToolExecCommand, `{"cmd":"cat abs.txt /orig/repository 2>&1 | head -1"}`, ""),
			want: execHead + "Process exited with code 0\nOriginal token count: 1\nOutput:\nx\n"},
	})
}

func TestReplaceUnsupported(t *testing.T) {
	ts, err := New().(trajectory.Replayer).NewToolSession(toolEnv(t, t.TempDir(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if _, err := ts.Execute(context.Background(), 1, call("view_image", `{"path":"x.png"}`, "")); err == nil {
		t.Error("view_image was executed; want an error")
	}
}
