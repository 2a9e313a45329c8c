package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// A tool test runs calls in order on one session in a fresh workspace and
// checks each result's content, error flag and toolUseResult exactly.

type toolCase struct {
	tool string
	args string // JSON input; {WS} stands for the workspace
	// recorded is the observation the session "recorded" for the call, from
	// which the session learns the shape; "" means none.
	recorded string
	want     string // content; {WS} as above
	isError  bool
	native   string // toolUseResult JSON, "" to skip the check
}

type toolTest struct {
	name  string
	files map[string]string // initial workspace files
	setup func(t *testing.T, ws string)
	calls []toolCase
}

func runToolTests(t *testing.T, tests []toolTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(ws, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.setup != nil {
				tt.setup(t, ws)
			}
			sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: ws, LogDir: t.TempDir(),
				Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for i, c := range tt.calls {
				sub := func(s string) string { return strings.ReplaceAll(s, "{WS}", ws) }
				call := &trajectory.ToolCall{ID: fmt.Sprintf("toolu_%02d", i), Name: c.tool, Arguments: json.RawMessage(sub(c.args))}
				if c.recorded != "" {
					call.Observation = &trajectory.Observation{Content: sub(c.recorded), IsError: c.isError}
				}
				f, err := sess.Execute(context.Background(), 1, call)
				if err != nil {
					t.Fatalf("call %d (%s): %v", i, c.tool, err)
				}
				if want := sub(c.want); f.Content != want || f.IsError != c.isError {
					t.Errorf("call %d (%s): error=%v want %v, content:\n%s", i, c.tool, f.IsError, c.isError, cmp.Diff(want, f.Content))
				}
				if c.native != "" {
					if got, want := durations.ReplaceAllString(string(f.Native), `"durationMs":0`), sub(c.native); got != want {
						t.Errorf("call %d (%s): toolUseResult:\n%s", i, c.tool, cmp.Diff(want, got))
					}
				}
			}
		})
	}
}

func TestBash(t *testing.T) {
	runToolTests(t, []toolTest{
		{name: "output", calls: []toolCase{{tool: "Bash", args: `{"command":"printf 'hi\\n\\n'"}`, want: "hi",
			native: `{"stdout":"hi","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`}}},
		{name: "failure merges the streams in order", calls: []toolCase{{tool: "Bash",
			args: `{"command":"echo out; echo err >&2; exit 3"}`, want: "Exit code 3\nout\nerr", isError: true,
			native: `"Error: Exit code 3\nout\nerr"`}}},
		{name: "failure without output", calls: []toolCase{{tool: "Bash", args: `{"command":"false"}`,
			want: "Exit code 1", isError: true}}},
		{name: "grep exit 1 is no failure", files: map[string]string{"a.txt": "x\n"}, calls: []toolCase{{tool: "Bash",
			args: `{"command":"grep nothing a.txt"}`, want: "(Bash completed with no output)",
			native: `{"stdout":"","stderr":"","interrupted":false,"isImage":false,"returnCodeInterpretation":"No matches found","noOutputExpected":false}`}}},
		{name: "cwd carries over", calls: []toolCase{
			{tool: "Bash", args: `{"command":"mkdir -p sub/dir && cd sub"}`, want: "(Bash completed with no output)",
				native: `{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":true}`},
			{tool: "Bash", args: `{"command":"pwd"}`, want: "{WS}/sub"},
		}},
		{name: "leaving the project resets the cwd", calls: []toolCase{
			{tool: "Bash", args: `{"command":"cd / && echo moved"}`, want: "moved\nShell cwd was reset to {WS}",
				native: `{"stdout":"moved","stderr":"\nShell cwd was reset to {WS}","interrupted":false,"isImage":false,"noOutputExpected":false}`},
			{tool: "Bash", args: `{"command":"pwd"}`, want: "{WS}"},
		}},
		{name: "formatter rewrote a file the agent read", files: map[string]string{"a.txt": "x\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.txt"}`, want: "1\tx\n2\t"},
			{tool: "Bash", args: `{"command":"sleep 0.02; echo y >> a.txt # --fix"}`,
				want:   "[This command modified 1 file you've previously read: a.txt. Call Read before editing.]",
				native: `{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false,"staleReadFileStateHint":"[This command modified 1 file you've previously read: a.txt. Call Read before editing.]"}`},
		}},
		{name: "timeout", calls: []toolCase{{tool: "Bash", args: `{"command":"echo started; sleep 5","timeout":300}`,
			want: "Exit code 143\nCommand timed out after 0s\nstarted", isError: true}}},
		{name: "legacy streams and errors", files: map[string]string{"a.txt": "x\n"}, calls: []toolCase{
			{tool: "Bash", args: `{"command":"echo out; echo err >&2; exit 2"}`, recorded: "ls: cannot access 'x': No such file or directory",
				want: "err\n\nout", isError: true},
			{tool: "Bash", args: `{"command":"echo err >&2; echo out"}`, recorded: "whatever", want: "out\nerr",
				native: `{"stdout":"out\nerr","stderr":"","interrupted":false,"isImage":false}`},
			{tool: "Bash", args: `{"command":"true"}`, recorded: "", want: ""},
		}},
	})
}

func TestBashLargeOutput(t *testing.T) {
	ws := t.TempDir()
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, LogDir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	saved := "/home/u/.claude/projects/-p/s1/tool-results/toolu_1.txt"
	call := &trajectory.ToolCall{ID: "toolu_2", Name: "Bash", Arguments: json.RawMessage(`{"command":"seq 1 10000"}`),
		Observation: &trajectory.Observation{Content: "<persisted-output>\nOutput too large (48.7KB). Full output saved to: " + saved + "\n\nPreview (first 2KB):\n1\n...\n</persisted-output>"}}
	f, err := sess.Execute(context.Background(), 1, call)
	if err != nil {
		t.Fatal(err)
	}
	var preview []string
	n := 0
	for i := 1; ; i++ {
		s := fmt.Sprint(i)
		if n+len(s)+1 > 2000 {
			break
		}
		preview = append(preview, s)
		n += len(s) + 1
	}
	want := "<persisted-output>\nOutput too large (47.7KB). Full output saved to: " + saved + "\n\nPreview (first 2KB):\n" +
		strings.Join(preview, "\n") + "\n...\n</persisted-output>"
	if f.Content != want {
		t.Errorf("content:\n%s", cmp.Diff(want, f.Content))
	}
	var nat map[string]any
	if err := json.Unmarshal(f.Native, &nat); err != nil || !strings.HasSuffix(nat["stdout"].(string), "\n9999\n10000") {
		t.Errorf("toolUseResult stdout should hold the whole output: %v", err)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		want []string
	}{
		{"a && b || c; d | e & f", []string{"a", "b", "c", "d", "e", "f"}},
		{`echo "a && b" 'c;d' x\;y`, []string{`echo "a && b" 'c;d' x\;y`}},
		{"cmd 2>&1 | grep x", []string{"cmd 2>&1", "grep x"}},
		{"ls >| out\ncat out", []string{"ls >| out", "cat out"}},
	} {
		if got := splitCommand(tt.cmd); !cmp.Equal(got, tt.want) {
			t.Errorf("splitCommand(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
	for _, tt := range []struct {
		cmd    string
		code   int
		err    bool
		interp string
	}{
		{"grep x f", 1, false, "No matches found"},
		{"grep x f", 2, true, ""},
		{"cat f | grep x", 1, false, "No matches found"},
		{"git -C d diff", 1, false, "Files differ"},
		{"git status", 1, true, "Command failed with exit code 1"},
		{"make", 0, false, ""},
	} {
		err, interp := exitSemantics(tt.cmd, tt.code)
		if err != tt.err || interp != tt.interp {
			t.Errorf("exitSemantics(%q, %d) = %v %q", tt.cmd, tt.code, err, interp)
		}
	}
	if jsDuration(120000) != "2m 0s" || jsDuration(600000) != "10m 0s" || jsDuration(45000) != "45s" {
		t.Errorf("jsDuration: %s %s %s", jsDuration(120000), jsDuration(600000), jsDuration(45000))
	}
}

const legacyRead = "     1\u2192old" + malwareReminder

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 300000)
	runToolTests(t, []toolTest{
		{name: "whole file", files: map[string]string{"a.py": "def f():\n\treturn 1\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.py"}`, want: "1\tdef f():\n2\t\treturn 1\n3\t",
				native: `{"type":"text","file":{"filePath":"{WS}/a.py","content":"def f():\n\treturn 1\n","numLines":3,"startLine":1,"totalLines":3}}`},
			{tool: "Read", args: `{"file_path":"{WS}/a.py"}`, want: readUnchanged,
				native: `{"type":"file_unchanged","file":{"filePath":"{WS}/a.py"}}`},
		}},
		{name: "window and CRLF", files: map[string]string{"a.txt": "l1\r\nl2\r\nl3\r\nl4"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.txt","offset":2,"limit":2}`, want: "2\tl2\n3\tl3",
				native: `{"type":"text","file":{"filePath":"{WS}/a.txt","content":"l2\nl3","numLines":2,"startLine":2,"totalLines":4}}`},
		}},
		{name: "empty file and short file", files: map[string]string{"e.txt": "", "s.txt": "a\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/e.txt"}`, want: "<system-reminder>Warning: the file exists but is shorter than the provided offset (1). The file has 1 lines.</system-reminder>"},
			{tool: "Read", args: `{"file_path":"{WS}/s.txt","offset":5}`, want: "<system-reminder>Warning: the file exists but is shorter than the provided offset (5). The file has 2 lines.</system-reminder>"},
		}},
		{name: "missing file", files: map[string]string{"notes.txt": "x"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/notes.md"}`, isError: true,
				want:   "File does not exist. Note: your current working directory is {WS}. Did you mean notes.txt?",
				native: `"Error: File does not exist. Note: your current working directory is {WS}. Did you mean notes.txt?"`},
		}},
		{name: "directory", setup: func(t *testing.T, ws string) { os.Mkdir(filepath.Join(ws, "d"), 0o755) }, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/d"}`, isError: true, want: "EISDIR: illegal operation on a directory, read '{WS}/d'"},
		}},
		{name: "binary", files: map[string]string{"a.zip": "PK"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.zip"}`, isError: true,
				want: "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .zip file. Please use appropriate tools for binary file analysis.</tool_use_error>"},
		}},
		{name: "too large", files: map[string]string{"big.txt": long}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/big.txt"}`, isError: true,
				want: "File content (293KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file."},
			{tool: "Read", args: `{"file_path":"{WS}/big.txt","limit":1}`, isError: true,
				want: "File content (75000 tokens) exceeds maximum allowed tokens (25000). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file."},
		}},
		{name: "legacy shape learned from the record", files: map[string]string{"a.txt": "one\ntwo"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.txt"}`, recorded: legacyRead, want: "     1\u2192one\n     2\u2192two" + malwareReminder},
			{tool: "Read", args: `{"file_path":"{WS}/missing.txt"}`, isError: true, want: "<tool_use_error>File does not exist.</tool_use_error>"},
		}},
	})
}

func TestPartialRead(t *testing.T) {
	line := strings.Repeat("y", 99)
	content := strings.Repeat(line+"\n", 1200) // 120000 characters, 30000 tokens
	got, n, note := partialRead(content, estimateTokens(content, ".txt"), 1201)
	if n != 850 || got != strings.Repeat(line+"\n", 849)+line {
		t.Errorf("kept %d lines", n)
	}
	want := "[Truncated: PARTIAL view \u2014 showing lines 1-850 of 1201 total (30000 tokens, cap 25000). Call Read with offset=851 limit=850 for the next page, or Grep to find a specific section. Do NOT answer from this page alone if the answer may be further in the file.]"
	if note != want {
		t.Errorf("note:\n%s", cmp.Diff(want, note))
	}
}

func TestWrite(t *testing.T) {
	runToolTests(t, []toolTest{
		{name: "create", calls: []toolCase{
			{tool: "Write", args: `{"file_path":"{WS}/new/a.txt","content":"hello\n"}`,
				want:   "File created successfully at: {WS}/new/a.txt" + stateNote,
				native: `{"type":"create","filePath":"{WS}/new/a.txt","content":"hello\n","structuredPatch":[],"originalFile":null,"userModified":false}`},
		}},
		{name: "update needs a read", files: map[string]string{"a.txt": "one\ntwo\n"}, calls: []toolCase{
			{tool: "Write", args: `{"file_path":"{WS}/a.txt","content":"x"}`, isError: true,
				want: "<tool_use_error>" + notReadYet + "</tool_use_error>", native: `"Error: ` + notReadYet + `"`},
			{tool: "Read", args: `{"file_path":"{WS}/a.txt"}`, want: "1\tone\n2\ttwo\n3\t"},
			{tool: "Write", args: `{"file_path":"{WS}/a.txt","content":"one\nTWO\n"}`,
				want:   "The file {WS}/a.txt has been updated successfully." + stateNote,
				native: `{"type":"update","filePath":"{WS}/a.txt","content":"one\nTWO\n","structuredPatch":[{"oldStart":1,"oldLines":2,"newStart":1,"newLines":2,"lines":[" one","-two","+TWO"]}],"originalFile":"one\ntwo\n","userModified":false}`},
		}},
		{name: "modified since read", files: map[string]string{"a.txt": "one\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.txt"}`, want: "1\tone\n2\t"},
			{tool: "Bash", args: `{"command":"sleep 0.01; echo two >> a.txt"}`, want: "(Bash completed with no output)"},
			{tool: "Write", args: `{"file_path":"{WS}/a.txt","content":"x"}`, isError: true,
				want: "<tool_use_error>" + modifiedSince + "</tool_use_error>"},
		}},
		{name: "legacy update shows the file", files: map[string]string{"a.txt": "one\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/a.txt"}`, recorded: legacyRead, want: "     1\u2192one\n     2\u2192" + malwareReminder},
			{tool: "Write", args: `{"file_path":"{WS}/a.txt","content":"uno\ndos"}`,
				recorded: "The file {WS}/a.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\u2192x",
				want:     "The file {WS}/a.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\u2192uno\n     2\u2192dos"},
			{tool: "Write", args: `{"file_path":"{WS}/b.txt","content":"b"}`, recorded: "File created successfully at: {WS}/b.txt",
				want: "File created successfully at: {WS}/b.txt"},
		}},
	})
}

func TestEdit(t *testing.T) {
	src := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	read := toolCase{tool: "Read", args: `{"file_path":"{WS}/f.txt"}`, want: "1\ta\n2\tb\n3\tc\n4\td\n5\te\n6\tf\n7\tg\n8\th\n9\ti\n10\tj\n11\t"}
	runToolTests(t, []toolTest{
		{name: "edit", files: map[string]string{"f.txt": src}, calls: []toolCase{
			read,
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"e\n","new_string":"E\nE2\n"}`,
				want:   "The file {WS}/f.txt has been updated successfully." + stateNote,
				native: `{"filePath":"{WS}/f.txt","oldString":"e\n","newString":"E\nE2\n","originalFile":"` + strings.ReplaceAll(src, "\n", `\n`) + `","structuredPatch":[{"oldStart":2,"oldLines":7,"newStart":2,"newLines":8,"lines":[" b"," c"," d","-e","+E","+E2"," f"," g"," h"]}],"userModified":false,"replaceAll":false}`},
			{tool: "Bash", args: `{"command":"cat f.txt | tr '\\n' ,"}`, want: "a,b,c,d,E,E2,f,g,h,i,j,"},
		}},
		{name: "errors", files: map[string]string{"f.txt": src + "a\n"}, calls: []toolCase{
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"b","new_string":"B"}`, isError: true,
				want: "<tool_use_error>" + notReadYet + "</tool_use_error>"},
			{tool: "Read", args: `{"file_path":"{WS}/f.txt","limit":1}`, want: "1\ta"},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"zzz","new_string":"y"}`, isError: true,
				want: "<tool_use_error>String to replace not found in file.\nString: zzz</tool_use_error>"},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"a\n","new_string":"A\n"}`, isError: true,
				want: "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: a\n</tool_use_error>"},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"a","new_string":"a"}`, isError: true,
				want: "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>"},
			{tool: "Edit", args: `{"file_path":"{WS}/g.txt","old_string":"a","new_string":"b"}`, isError: true,
				want: "<tool_use_error>File does not exist. Note: your current working directory is {WS}.</tool_use_error>"},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"a\n","new_string":"A\n","replace_all":true}`,
				want: "The file {WS}/f.txt has been updated. All occurrences were successfully replaced." + stateNote},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"","new_string":"x"}`, isError: true,
				want: "<tool_use_error>Cannot create new file - file already exists.</tool_use_error>"},
			{tool: "Edit", args: `{"file_path":"{WS}/h.txt","old_string":"","new_string":"new\n"}`,
				want: "The file {WS}/h.txt has been updated successfully." + stateNote},
		}},
		{name: "curly quotes and deleted lines", files: map[string]string{"q.txt": "say \u201chi\u201d\nkeep\ndrop\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/q.txt"}`, want: "1\tsay \u201chi\u201d\n2\tkeep\n3\tdrop\n4\t"},
			{tool: "Edit", args: `{"file_path":"{WS}/q.txt","old_string":"say \"hi\"","new_string":"say \"bye\""}`,
				want:   "The file {WS}/q.txt has been updated successfully." + stateNote,
				native: "{\"filePath\":\"{WS}/q.txt\",\"oldString\":\"say \u201chi\u201d\",\"newString\":\"say \\\"bye\\\"\",\"originalFile\":\"say \u201chi\u201d\\nkeep\\ndrop\\n\",\"structuredPatch\":[{\"oldStart\":1,\"oldLines\":3,\"newStart\":1,\"newLines\":3,\"lines\":[\"-say \u201chi\u201d\",\"+say \u201cbye\u201d\",\" keep\",\" drop\"]}],\"userModified\":false,\"replaceAll\":false}"},
			{tool: "Edit", args: `{"file_path":"{WS}/q.txt","old_string":"drop","new_string":""}`,
				want: "The file {WS}/q.txt has been updated successfully." + stateNote},
			{tool: "Bash", args: `{"command":"cat q.txt"}`, want: "say \u201cbye\u201d\nkeep"},
		}},
		{name: "legacy snippet", files: map[string]string{"f.txt": src}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/f.txt"}`, recorded: legacyRead,
				want: "     1\u2192a\n     2\u2192b\n     3\u2192c\n     4\u2192d\n     5\u2192e\n     6\u2192f\n     7\u2192g\n     8\u2192h\n     9\u2192i\n    10\u2192j\n    11\u2192" + malwareReminder},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"f","new_string":"F1\nF2"}`,
				recorded: "The file x has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\u2192x",
				want:     "The file {WS}/f.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     2\u2192b\n     3\u2192c\n     4\u2192d\n     5\u2192e\n     6\u2192F1\n     7\u2192F2\n     8\u2192g\n     9\u2192h\n    10\u2192i\n    11\u2192j"},
			{tool: "Edit", args: `{"file_path":"{WS}/f.txt","old_string":"g","new_string":"G"}`,
				recorded: "The file x has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\u2192x",
				want:     "The file {WS}/f.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     4\u2192d\n     5\u2192e\n     6\u2192F1\n     7\u2192F2\n     8\u2192G\n     9\u2192h\n    10\u2192i\n    11\u2192j\n    12\u2192"},
		}},
		{name: "multi edit", files: map[string]string{"m.txt": "one two three\n"}, calls: []toolCase{
			{tool: "Read", args: `{"file_path":"{WS}/m.txt"}`, want: "1\tone two three\n2\t"},
			{tool: "MultiEdit", args: `{"file_path":"{WS}/m.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"three","new_string":"` + strings.Repeat("3", 60) + `"}]}`,
				want:   "Applied 2 edits to {WS}/m.txt:\n1. Replaced \"one\" with \"1\"\n2. Replaced \"three\" with \"" + strings.Repeat("3", 50) + "...\"",
				native: `{"filePath":"{WS}/m.txt","edits":[{"old_string":"one","new_string":"1","replace_all":false},{"old_string":"three","new_string":"` + strings.Repeat("3", 60) + `","replace_all":false}],"originalFileContents":"one two three\n","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-one two three","+1 two ` + strings.Repeat("3", 60) + `"]}],"userModified":false}`},
			{tool: "MultiEdit", args: `{"file_path":"{WS}/m.txt","edits":[{"old_string":"two","new_string":"2"},{"old_string":"nope","new_string":"x"}]}`, isError: true,
				want: "<tool_use_error>String to replace not found in file.\nString: nope</tool_use_error>"},
		}},
	})
}

func TestStructuredPatch(t *testing.T) {
	for _, tt := range []struct {
		name, old, new string
		want           []hunk
	}{
		{"no newline at end", "a\nb", "a\nc", []hunk{{1, 2, 1, 2, []string{" a", "-b", noNewline, "+c", noNewline}}}},
		{"append a line", "a\n", "a\nb\n", []hunk{{1, 1, 1, 2, []string{" a", "+b"}}}},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			[]hunk{{1, 5, 1, 5, []string{" 1", "-2", "+X", " 3", " 4", " 5"}}, {8, 5, 8, 5, []string{" 8", " 9", " 10", "-11", "+Y", " 12"}}}},
		{"create from empty", "", "x\n", []hunk{{1, 0, 1, 1, []string{"+x"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, structuredPatch(tt.old, tt.new)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func setMtimes(names ...string) func(t *testing.T, ws string) {
	return func(t *testing.T, ws string) {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, n := range names {
			at := base.Add(time.Duration(i) * time.Minute)
			if err := os.Chtimes(filepath.Join(ws, n), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestGlob(t *testing.T) {
	runToolTests(t, []toolTest{
		{name: "sorted oldest first, relative", files: map[string]string{"b.go": "", "sub/a.go": "", ".hidden/c.go": "", "d.txt": ""},
			setup: setMtimes("sub/a.go", ".hidden/c.go", "b.go"), calls: []toolCase{
				{tool: "Glob", args: `{"pattern":"**/*.go"}`, want: "sub/a.go\n.hidden/c.go\nb.go",
					native: `{"filenames":["sub/a.go",".hidden/c.go","b.go"],"durationMs":0,"numFiles":3,"truncated":false,"totalMatches":3,"countIsComplete":true}`},
				{tool: "Glob", args: `{"pattern":"*.go","path":"{WS}/sub"}`, want: "sub/a.go"},
				{tool: "Glob", args: `{"pattern":"*.rs"}`, want: "No files found"},
				{tool: "Glob", args: `{"pattern":"*.go","path":"{WS}/nope"}`, isError: true,
					want: "<tool_use_error>Directory does not exist: {WS}/nope. Note: your current working directory is {WS}.</tool_use_error>"},
				{tool: "Glob", args: `{"pattern":"*.go","path":"{WS}/b.go"}`, isError: true,
					want: "<tool_use_error>Path is not a directory: {WS}/b.go</tool_use_error>"},
			}},
		{name: "legacy absolute paths", files: map[string]string{"a.go": ""}, calls: []toolCase{
			{tool: "Glob", args: `{"pattern":"*.go"}`, recorded: "/x/y.go", want: "{WS}/a.go",
				native: `{"filenames":["{WS}/a.go"],"durationMs":0,"numFiles":1,"truncated":false}`},
		}},
	})
	// Over 100 files: the first 100 and the CLI's note.
	ws := t.TempDir()
	for i := range 105 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%03d.go", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	f, err := sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "g", Name: "Glob", Arguments: json.RawMessage(`{"pattern":"*.go"}`)})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(f.Content, "\n")
	if len(lines) != 101 || lines[100] != "(Showing 100 of 105 matching files; 5 more are not listed. Narrow the pattern or path to see the rest.)" {
		t.Errorf("truncated glob: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestGrep(t *testing.T) {
	files := map[string]string{"a.py": "def a():\n    pass\n", "pkg/b.py": "x = 1\ndef b():\n    return 2\n\n\n\ndef c():\n", "c.txt": "nothing\n"}
	mt := setMtimes("pkg/b.py", "a.py", "c.txt")
	runToolTests(t, []toolTest{
		{name: "files with matches, newest first", files: files, setup: mt, calls: []toolCase{
			{tool: "Grep", args: `{"pattern":"def "}`, want: "Found 2 files\na.py\npkg/b.py",
				native: `{"mode":"files_with_matches","filenames":["a.py","pkg/b.py"],"numFiles":2}`},
			{tool: "Grep", args: `{"pattern":"zzz"}`, want: "No files found"},
			{tool: "Grep", args: `{"pattern":"def ","head_limit":1}`, want: "Found 1 file limit: 1\na.py",
				native: `{"mode":"files_with_matches","filenames":["a.py"],"numFiles":1,"appliedLimit":1}`},
		}},
		{name: "content", files: files, setup: mt, calls: []toolCase{
			{tool: "Grep", args: `{"pattern":"def ","output_mode":"content","path":"{WS}/pkg"}`, want: "pkg/b.py:2:def b():\npkg/b.py:7:def c():",
				native: `{"mode":"content","numFiles":0,"filenames":[],"content":"pkg/b.py:2:def b():\npkg/b.py:7:def c():","numLines":2}`},
			{tool: "Grep", args: `{"pattern":"def b","output_mode":"content","-C":1,"path":"{WS}/pkg"}`, want: "{WS}/pkg/b.py-1-x = 1\npkg/b.py:2:def b():\n{WS}/pkg/b.py-3-    return 2"},
			{tool: "Grep", args: `{"pattern":"def","output_mode":"content","-A":1,"path":"{WS}/pkg/b.py"}`, want: "2:def b():\n3-    return 2\n--\n7:def c():"},
			{tool: "Grep", args: `{"pattern":"DEF","output_mode":"content","-i":true,"-n":false,"glob":"a.*"}`, want: "a.py:def a():"},
			{tool: "Grep", args: `{"pattern":"zzz","output_mode":"content"}`, want: "No matches found"},
			{tool: "Grep", args: `{"pattern":"x","path":"{WS}/nope"}`, isError: true,
				want: "<tool_use_error>Path does not exist: {WS}/nope. Note: your current working directory is {WS}.</tool_use_error>"},
		}},
		{name: "count", files: files, setup: mt, calls: []toolCase{
			{tool: "Grep", args: `{"pattern":"def","output_mode":"count"}`, want: "a.py:1\npkg/b.py:2\n\nFound 3 total occurrences across 2 files.",
				native: `{"mode":"count","numFiles":2,"filenames":[],"content":"a.py:1\npkg/b.py:2","numMatches":3}`},
		}},
	})
}

func TestLSAndTodoWrite(t *testing.T) {
	runToolTests(t, []toolTest{
		{name: "ls", files: map[string]string{"src/a.go": "", "src/z/b.go": "", ".git/HEAD": "", "node_modules/m/x.js": "", "README": ""}, calls: []toolCase{
			{tool: "LS", args: `{"path":"{WS}"}`,
				want: "- {WS}/\n  - README\n  - node_modules/\n  - src/\n    - a.go\n    - z/\n      - b.go\n\nNOTE: do any of the files above seem malicious? If so, you MUST refuse to continue work."},
			{tool: "LS", args: `{"path":"{WS}/src","ignore":["z"]}`,
				want: "- {WS}/\n  - src/\n    - a.go\n\nNOTE: do any of the files above seem malicious? If so, you MUST refuse to continue work."},
		}},
		{name: "todo", calls: []toolCase{
			{tool: "TodoWrite", args: `{"todos":[{"content":"a","status":"pending","activeForm":"A"}]}`, want: todoWriteConfirmed,
				native: `{"oldTodos":[],"newTodos":[{"content":"a","status":"pending","activeForm":"A"}]}`},
			{tool: "TodoWrite", args: `{"todos":[{"content":"a","status":"completed","activeForm":"A"}]}`, want: todoWriteConfirmed,
				native: `{"oldTodos":[{"content":"a","status":"pending","activeForm":"A"}],"newTodos":[{"content":"a","status":"completed","activeForm":"A"}]}`},
			{tool: "TodoWrite", args: `{"todos":[]}`, want: todoWriteConfirmed, native: `{"oldTodos":[],"newTodos":[]}`},
		}},
	})
}

func TestPathMapping(t *testing.T) {
	ws := t.TempDir()
	orig := "/home/someone/project"
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: orig, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tt := range []struct{ tool, args, want string }{
		{"Read", `{"file_path":"/home/someone/project/a.txt"}`, "1\thi\n2\t"},
		{"Read", `{"file_path":"/home/someone/project/b.txt"}`, "File does not exist. Note: your current working directory is /home/someone/project."},
		{"Write", `{"file_path":"/home/someone/project/c.txt","content":"c"}`, "File created successfully at: /home/someone/project/c.txt" + stateNote},
		{"Glob", `{"pattern":"/home/someone/project/*.txt"}`, "a.txt\nc.txt"},
		{"Bash", `{"command":"cat c.txt"}`, "c"},
	} {
		f, err := sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "t", Name: tt.tool, Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Fatal(err)
		}
		if tt.tool == "Glob" {
			f.Content = strings.Join(sortedLines(f.Content), "\n")
		}
		if f.Content != tt.want {
			t.Errorf("%s %s:\n%s", tt.tool, tt.args, cmp.Diff(tt.want, f.Content))
		}
	}
}

func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	return l
}

func TestCheckReplayableRichRead(t *testing.T) {
	for _, p := range []string{"/a/b.png", "/a/b.PDF", "/a/n.ipynb"} {
		c := &trajectory.ToolCall{Name: "Read", Arguments: json.RawMessage(`{"file_path":"` + p + `"}`)}
		if err := New().CheckReplayable(c); err == nil {
			t.Errorf("Read %s should not be replayable", p)
		}
	}
}

// A Read with a limit of a file over the whole-file cap streams the window:
// the same text as the whole-file path for the same lines, the full line
// count, and no allocation of the file (a 20 GB sparse file of one line is
// refused as a pvisor error, quickly).
func TestReadWindowOfLargeFile(t *testing.T) {
	ws := t.TempDir()
	var big strings.Builder
	big.WriteString("\ufeff")
	for i := 1; i <= 40000; i++ {
		fmt.Fprintf(&big, "line %d\r\n", i)
	}
	small := strings.Join(strings.SplitAfter(big.String(), "\n")[:20], "")
	for name, content := range map[string]string{"big.txt": big.String(), "small.txt": small} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if big.Len() <= readMaxBytes {
		t.Fatalf("big.txt is %d bytes, not over the %d cap", big.Len(), readMaxBytes)
	}
	sparse := filepath.Join(ws, "sparse.txt")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 20<<30); err != nil {
		t.Fatal(err)
	}
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: ws, LogDir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	read := func(i int, file string, offset, limit int) (trajectory.Fresh, error) {
		args, _ := json.Marshal(map[string]any{"file_path": filepath.Join(ws, file), "offset": offset, "limit": limit})
		return sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: fmt.Sprintf("toolu_%02d", i), Name: "Read", Arguments: args})
	}
	for i, w := range []struct{ offset, limit int }{{1, 3}, {5, 4}} {
		want, err := read(2*i, "small.txt", w.offset, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read(2*i+1, "big.txt", w.offset, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != want.Content || got.IsError {
			t.Errorf("window %v: streamed %q, whole-file path %q", w, got.Content, want.Content)
		}
		if !strings.Contains(string(got.Native), `"totalLines":40001`) {
			t.Errorf("window %v: native %s, want totalLines 40001", w, got.Native)
		}
	}
	if _, err := read(9, "sparse.txt", 1, 5); run.KindOf(err) != run.TooLarge {
		t.Errorf("20 GB one-line sparse file: %v, want a TooLarge pvisor error", err)
	}
}
