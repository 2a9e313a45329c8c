package opencode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// toolCase runs one call on a fresh workspace and checks the exact text
// OpenCode 1.18 produces (shapes taken from sessions the real CLI recorded,
// testdata/replay/*), and optionally the stored metadata and the files left.
type toolCase struct {
	name  string
	files map[string]string // relative path → content; "/" suffix makes a directory
	tool  string
	args  string // JSON; {W} is the workspace
	want  string // {W} is the workspace
	isErr bool
	meta  string            // expected metadata JSON ({W} expanded), "" to skip
	after map[string]string // files expected afterwards
	noRG  bool              // run without ripgrep (the fallback search)
}

func newWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(ws, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func runToolCases(t *testing.T, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.tool+"/"+tc.name, func(t *testing.T) {
			ws := newWorkspace(t, tc.files)
			sess, err := NewToolSession(trajectory.ToolEnv{Workspace: ws, Env: testEnv(ws), LogDir: filepath.Join(filepath.Dir(ws), "logs")})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if tc.noRG {
				sess.(*session).rg = ""
			} else if sess.(*session).rg == "" && (tc.tool == "glob" || tc.tool == "grep") {
				t.Skip("rg not on PATH")
			}
			x := func(s string) string { return strings.ReplaceAll(s, "{W}", ws) }
			call := &trajectory.ToolCall{ID: "call_1", Name: tc.tool, Arguments: []byte(x(tc.args))}
			if err := New().CheckReplayable(call); err != nil {
				t.Fatalf("CheckReplayable: %v", err)
			}
			f, err := sess.Execute(context.Background(), 1, call)
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if d := cmp.Diff(x(tc.want), f.Content); d != "" || f.IsError != tc.isErr {
				t.Errorf("content (-want +got), is_error %v want %v:\n%s", f.IsError, tc.isErr, d)
			}
			if tc.meta != "" {
				got := compactJS(gjson.ParseBytes(f.Native).Get("metadata"))
				if want := compactJS(gjson.Parse(x(tc.meta))); got != want {
					t.Errorf("metadata (-want +got):\n%s", cmp.Diff(want, got))
				}
			}
			for p, want := range tc.after {
				got, err := os.ReadFile(filepath.Join(ws, p))
				if err != nil {
					t.Errorf("%s: %v", p, err)
				} else if string(got) != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
		})
	}
}

func TestToolBash(t *testing.T) {
	runToolCases(t, []toolCase{
		{name: "stdout and stderr", tool: "bash", args: `{"command":"echo out; echo err >&2; exit 3","description":"d"}`,
			want: "out\nerr\n", meta: `{"output":"out\nerr\n","exit":3,"truncated":false}`},
		{name: "no output", tool: "bash", args: `{"command":"true"}`, want: "(no output)",
			meta: `{"output":"(no output)","exit":0,"truncated":false}`},
		{name: "workdir", files: map[string]string{"sub/x": ""}, tool: "bash", args: `{"command":"pwd","workdir":"sub"}`,
			want: "{W}/sub\n"},
		{name: "cd does not carry over", files: map[string]string{"sub/x": ""}, tool: "bash", args: `{"command":"cd sub && pwd"}`,
			want: "{W}/sub\n"},
		{name: "timeout", tool: "bash", args: `{"command":"echo start; sleep 5; echo never","timeout":300}`,
			want: "start\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 300 ms. If this command is " +
				"expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>",
			meta: `{"output":"start\n","exit":null,"truncated":false}`},
		{name: "negative timeout", tool: "bash", args: `{"command":"true","timeout":-5}`,
			want: "Invalid timeout value: -5. Timeout must be a positive number.", isErr: true},
		{name: "missing workdir", tool: "bash", args: `{"command":"pwd","workdir":"{W}/nowhere"}`,
			want: "NotFound: FileSystem.access ({W}/nowhere)", isErr: true, meta: `{"output":""}`},
		{name: "invalid UTF-8", tool: "bash", args: `{"command":"printf '\\xff\\xfe abc \\xe2\\x82 x\\n'"}`,
			want: "\uFFFD\uFFFD abc \uFFFD x\n"},
		{name: "background job holds the call", tool: "bash", args: `{"command":"(sleep 0.3; echo late) & echo early"}`,
			want: "early\nlate\n"},
		{name: "killed by a signal", tool: "bash", args: `{"command":"echo before; kill -9 $$"}`,
			want: "before\n\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this command is " +
				"expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>"},
	})
}

// Long output keeps its last 2000 lines behind a note naming the file
// holding all of it.
func TestToolBashTruncation(t *testing.T) {
	ws := newWorkspace(t, nil)
	logs := filepath.Join(filepath.Dir(ws), "logs")
	sess, err := NewToolSession(trajectory.ToolEnv{Workspace: ws, Env: testEnv(ws), LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	f, err := sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "c", Name: "bash", Arguments: []byte(`{"command":"seq 1 3000"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var tail strings.Builder
	for i := 1002; i <= 3000; i++ {
		tail.WriteString(itoa(i) + "\n")
	}
	want := "...output truncated...\n\nFull output saved to: " + f.LogPath + "\n\n" + tail.String()
	if f.Content != want {
		t.Errorf("content (-want +got):\n%s", cmp.Diff(want, f.Content))
	}
	full, err := os.ReadFile(f.LogPath)
	if err != nil || !strings.HasPrefix(string(full), "1\n2\n") || !strings.HasSuffix(string(full), "2999\n3000\n") {
		t.Errorf("log %s: %v %d bytes", f.LogPath, err, len(full))
	}
	meta := gjson.ParseBytes(f.Native).Get("metadata")
	if !meta.Get("truncated").Bool() || meta.Get("outputPath").Str != f.LogPath || meta.Get("exit").Int() != 0 ||
		meta.Get("output").Str != string(full) {
		t.Errorf("metadata %.200s", meta.Raw)
	}
	if f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("exit code %v", f.ExitCode)
	}
}

func TestToolRead(t *testing.T) {
	readme := "# Greeter\n\nA tiny greeter. It prints a greting.\n"
	long := strings.Repeat("x", 2500) + "\n"
	runToolCases(t, []toolCase{
		{name: "file", files: map[string]string{"README.md": readme}, tool: "read", args: `{"filePath":"{W}/README.md"}`,
			want: "<path>{W}/README.md</path>\n<type>file</type>\n<content>\n1: # Greeter\n2: \n3: A tiny greeter. It prints a greting.\n\n(End of file - total 3 lines)\n</content>",
			meta: `{"preview":"# Greeter\n\nA tiny greeter. It prints a greting.","truncated":false,"loaded":[],"display":{"type":"file","path":"{W}/README.md","text":"# Greeter\n\nA tiny greeter. It prints a greting.","lineStart":1,"lineEnd":3,"totalLines":3,"truncated":false}}`},
		{name: "window", files: map[string]string{"n.txt": "a\nb\nc\nd\ne\n"}, tool: "read", args: `{"filePath":"{W}/n.txt","offset":2,"limit":2}`,
			want: "<path>{W}/n.txt</path>\n<type>file</type>\n<content>\n2: b\n3: c\n\n(Showing lines 2-3 of 5. Use offset=4 to continue.)\n</content>"},
		{name: "relative path", files: map[string]string{"d/n.txt": "x"}, tool: "read", args: `{"filePath":"d/n.txt"}`,
			want: "<path>{W}/d/n.txt</path>\n<type>file</type>\n<content>\n1: x\n\n(End of file - total 1 lines)\n</content>"},
		{name: "crlf and empty file", files: map[string]string{"e.txt": ""}, tool: "read", args: `{"filePath":"{W}/e.txt"}`,
			want: "<path>{W}/e.txt</path>\n<type>file</type>\n<content>\n\n\n(End of file - total 0 lines)\n</content>"},
		{name: "crlf", files: map[string]string{"c.txt": "one\r\ntwo\r\nthree"}, tool: "read", args: `{"filePath":"{W}/c.txt"}`,
			want: "<path>{W}/c.txt</path>\n<type>file</type>\n<content>\n1: one\n2: two\n3: three\n\n(End of file - total 3 lines)\n</content>"},
		{name: "long line", files: map[string]string{"l.txt": long}, tool: "read", args: `{"filePath":"{W}/l.txt"}`,
			want: "<path>{W}/l.txt</path>\n<type>file</type>\n<content>\n1: " + strings.Repeat("x", 2000) +
				"... (line truncated to 2000 chars)\n\n(End of file - total 1 lines)\n</content>"},
		{name: "offset out of range", files: map[string]string{"README.md": readme}, tool: "read", args: `{"filePath":"{W}/README.md","offset":10}`,
			want: "Offset 10 is out of range for this file (3 lines)", isErr: true},
		{name: "not found", files: map[string]string{"README.md": readme}, tool: "read", args: `{"filePath":"{W}/nope.md"}`,
			want: "File not found: {W}/nope.md", isErr: true},
		{name: "did you mean", files: map[string]string{"README.md": readme}, tool: "read", args: `{"filePath":"{W}/READM"}`,
			want: "File not found: {W}/READM\n\nDid you mean one of these?\n{W}/README.md", isErr: true},
		{name: "binary", files: map[string]string{"b.dat": "a\x00b"}, tool: "read", args: `{"filePath":"{W}/b.dat"}`,
			want: "Cannot read binary file: {W}/b.dat", isErr: true},
		{name: "directory", files: map[string]string{"sub/.hidden": "", "sub/deeper/d": "", "sub/dup.txt": "", "sub/B.md": ""},
			tool: "read", args: `{"filePath":"{W}/sub"}`,
			want: "<path>{W}/sub</path>\n<type>directory</type>\n<entries>\n.hidden\nB.md\ndeeper/\ndup.txt\n\n(4 entries)\n</entries>",
			meta: `{"preview":".hidden\nB.md\ndeeper/\ndup.txt","truncated":false,"loaded":[],"display":{"type":"directory","path":"{W}/sub","entries":[".hidden","B.md","deeper/","dup.txt"],"offset":1,"totalEntries":4,"truncated":false}}`},
		{name: "directory window", files: map[string]string{"m/f1.txt": "", "m/f10.txt": "", "m/f100.txt": "", "m/f2.txt": ""},
			tool: "read", args: `{"filePath":"{W}/m","offset":2,"limit":2}`,
			want: "<path>{W}/m</path>\n<type>directory</type>\n<entries>\nf10.txt\nf100.txt\n\n(Showing 2 of 4 entries. Use 'offset' parameter to read beyond entry 4)\n</entries>"},
		{name: "instructions", files: map[string]string{"sub/AGENTS.md": "Be nice.\n", "sub/a.txt": "inside\n"}, tool: "read",
			args: `{"filePath":"{W}/sub/a.txt"}`,
			want: "<path>{W}/sub/a.txt</path>\n<type>file</type>\n<content>\n1: inside\n\n(End of file - total 1 lines)\n</content>\n\n" +
				"<system-reminder>\nInstructions from: {W}/sub/AGENTS.md\nBe nice.\n\n</system-reminder>"},
		{name: "image", files: map[string]string{"p.png": "\x89PNG\r\n\x1a\nxx"}, tool: "read", args: `{"filePath":"{W}/p.png"}`,
			want: "Image read successfully", meta: `{"preview":"Image read successfully","truncated":false,"loaded":[]}`},
	})
}

func TestToolWriteEdit(t *testing.T) {
	readme := "# Greeter\n\nA tiny greeter. It prints a greting.\n"
	diff := "Index: {W}/README.md\n===================================================================\n--- {W}/README.md\n+++ {W}/README.md\n" +
		"@@ -1,3 +1,3 @@\n # Greeter\n \n-A tiny greeter. It prints a greting.\n+A tiny greeter. It prints a greeting.\n"
	runToolCases(t, []toolCase{
		{name: "new file", tool: "write", args: `{"filePath":"{W}/a/b.txt","content":"deep"}`, want: "Wrote file successfully.",
			meta: `{"diagnostics":{},"filepath":"{W}/a/b.txt","exists":false,"truncated":false}`, after: map[string]string{"a/b.txt": "deep"}},
		{name: "existing BOM kept", files: map[string]string{"m.txt": "\uFEFFold"}, tool: "write", args: `{"filePath":"{W}/m.txt","content":"new"}`,
			want: "Wrote file successfully.", meta: `{"diagnostics":{},"filepath":"{W}/m.txt","exists":true,"truncated":false}`,
			after: map[string]string{"m.txt": "\uFEFFnew"}},
		{name: "directory", files: map[string]string{"sub/": ""}, tool: "write", args: `{"filePath":"{W}/sub","content":"x"}`,
			want: "BadResource: FileSystem.readFile ({W}/sub)", isErr: true},
		{name: "replace", files: map[string]string{"README.md": readme}, tool: "edit",
			args: `{"filePath":"{W}/README.md","oldString":"greting","newString":"greeting"}`, want: "Edit applied successfully.",
			meta:  `{"diagnostics":{},"diff":"` + jsonBody(diff) + `","filediff":{"file":"{W}/README.md","patch":"` + jsonBody(diff) + `","additions":1,"deletions":1},"truncated":false}`,
			after: map[string]string{"README.md": strings.Replace(readme, "greting", "greeting", 1)}},
		{name: "not found", files: map[string]string{"README.md": readme}, tool: "edit",
			args: `{"filePath":"{W}/README.md","oldString":"nothere","newString":"x"}`, want: errNotFound, isErr: true},
		{name: "identical", files: map[string]string{"README.md": readme}, tool: "edit",
			args: `{"filePath":"{W}/README.md","oldString":"same","newString":"same"}`, want: errNoChange, isErr: true},
		{name: "missing file", tool: "edit", args: `{"filePath":"{W}/missing.md","oldString":"a","newString":"b"}`,
			want: "File {W}/missing.md not found", isErr: true},
		{name: "directory", files: map[string]string{"sub/": ""}, tool: "edit", args: `{"filePath":"{W}/sub","oldString":"a","newString":"b"}`,
			want: "Path is a directory, not a file: {W}/sub", isErr: true},
		{name: "multiple", files: map[string]string{"d.txt": "dup\ndup\nend\n"}, tool: "edit",
			args: `{"filePath":"{W}/d.txt","oldString":"dup","newString":"DUP"}`, want: errMultiple, isErr: true},
		{name: "replaceAll expands $", files: map[string]string{"d.txt": "a dup b\n"}, tool: "edit",
			args: `{"filePath":"{W}/d.txt","oldString":"dup","newString":"[$&|$$|$'|$` + "`" + `]","replaceAll":true}`,
			want: "Edit applied successfully.", after: map[string]string{"d.txt": "a [dup|$| b\n|a ] b\n"}},
		{name: "create with empty oldString", tool: "edit", args: `{"filePath":"{W}/c.md","oldString":"","newString":"new file\n"}`,
			want: "Edit applied successfully.", after: map[string]string{"c.md": "new file\n"},
			meta: `{"diagnostics":{},"diff":"Index: {W}/c.md\n===================================================================\n--- {W}/c.md\n+++ {W}/c.md\n@@ -0,0 +1,1 @@\n+new file\n","filediff":{"file":"{W}/c.md","patch":"Index: {W}/c.md\n===================================================================\n--- {W}/c.md\n+++ {W}/c.md\n@@ -0,0 +1,1 @@\n+new file\n","additions":1,"deletions":0},"truncated":false}`},
		{name: "empty oldString on a file", files: map[string]string{"c.md": "x"}, tool: "edit",
			args: `{"filePath":"{W}/c.md","oldString":"","newString":"y"}`, want: errEmptyOld, isErr: true},
		{name: "indentation drift", files: map[string]string{"f.py": "def f():\n        return  1\n"}, tool: "edit",
			args: `{"filePath":"{W}/f.py","oldString":"def f():\n    return  1","newString":"def f():\n    return 2"}`,
			want: "Edit applied successfully.", after: map[string]string{"f.py": "def f():\n    return 2\n"}},
		{name: "crlf file", files: map[string]string{"c.txt": "l1\r\n    indented here\r\nl3\r\n"}, tool: "edit",
			args: `{"filePath":"{W}/c.txt","oldString":"l1\nindented here","newString":"L1\nINDENTED"}`,
			want: "Edit applied successfully.", after: map[string]string{"c.txt": "L1\r\nINDENTED\nl3\r\n"}}, // as the CLI left it: the fuzzy span ate a "\r"
		{name: "sequential edits", files: map[string]string{"m.txt": "one two\n"}, tool: "multiedit",
			args: `{"filePath":"{W}/m.txt","edits":[{"oldString":"one","newString":"1"},{"oldString":"two","newString":"2"}]}`,
			want: "Edit applied successfully.", after: map[string]string{"m.txt": "1 2\n"}},
		{name: "failing edit", files: map[string]string{"m.txt": "one two\n"}, tool: "multiedit",
			args: `{"filePath":"{W}/m.txt","edits":[{"oldString":"one","newString":"1"},{"oldString":"zzz","newString":"2"}]}`,
			want: errNotFound, isErr: true},
	})
}

func jsonBody(s string) string {
	b := jsonString(s)
	return string(b[1 : len(b)-1])
}

func TestToolSearch(t *testing.T) {
	files := map[string]string{"greeter/util.py": "def greet(name):\n    return name\n\n\ndef shout(name):\n    return name\n",
		"main.py": "print('hi')\n", "README.md": "hello\n"}
	grepWant := "Found 2 matches\n{W}/greeter/util.py:\n  Line 1: def greet(name):\n\n  Line 5: def shout(name):\n"
	cases := []toolCase{
		{name: "pattern", files: files, tool: "glob", args: `{"pattern":"**/*.py","path":"{W}/greeter"}`,
			want: "{W}/greeter/util.py", meta: `{"count":1,"truncated":false}`},
		{name: "no match", files: files, tool: "glob", args: `{"pattern":"*.zzz"}`, want: "No files found",
			meta: `{"count":0,"truncated":false}`},
		{name: "path is a file", files: files, tool: "glob", args: `{"pattern":"x","path":"{W}/main.py"}`,
			want: "glob path must be a directory: {W}/main.py", isErr: true},
		{name: "missing path", files: files, tool: "glob", args: `{"pattern":"x","path":"{W}/nowhere"}`,
			want: "ripgrep execution failed", isErr: true},
		{name: "matches", files: files, tool: "grep", args: `{"pattern":"def ","path":"{W}","include":"*.py"}`,
			want: grepWant, meta: `{"matches":2,"truncated":false}`},
		{name: "no match", files: files, tool: "grep", args: `{"pattern":"zzzqqq"}`, want: "No files found",
			meta: `{"matches":0,"truncated":false}`},
		{name: "file path searches its directory", files: files, tool: "grep", args: `{"pattern":"hi","path":"{W}/main.py"}`,
			want: "Found 1 matches\n{W}/main.py:\n  Line 1: print('hi')\n"},
	}
	for _, c := range cases {
		c.name += " without rg"
		c.noRG = true
		cases = append(cases, c)
	}
	cases = append(cases, toolCase{name: "bad regex", files: files, tool: "grep", args: `{"pattern":"("}`,
		want: "regex parse error:\n    (\n    ^\nerror: unclosed group", isErr: true})
	runToolCases(t, cases)
}

func TestToolListPatchTodo(t *testing.T) {
	files := map[string]string{"b/c.txt": "", "a.txt": "", "node_modules/x.js": "", "README.md": "x\ny\nz\n", "gone.txt": "gone\n"}
	runToolCases(t, []toolCase{
		{name: "tree", files: files, tool: "list", args: `{"path":"{W}"}`,
			want: "{W}/\n  b/\n    c.txt\n  README.md\n  a.txt\n  gone.txt\n", meta: `{"count":4,"truncated":false}`},
		{name: "tree without rg", files: files, tool: "list", args: `{}`, noRG: true,
			want: "{W}/\n  b/\n    c.txt\n  README.md\n  a.txt\n  gone.txt\n"},
		{name: "add", files: files, tool: "apply_patch", args: `{"patchText":"*** Begin Patch\n*** Add File: added.txt\n+hello\n+world\n*** End Patch"}`,
			want: "Success. Updated the following files:\nA added.txt", after: map[string]string{"added.txt": "hello\nworld\n"},
			meta: `{"diff":"Index: {W}/added.txt\n===================================================================\n--- {W}/added.txt\n+++ {W}/added.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\n","files":[{"filePath":"{W}/added.txt","relativePath":"added.txt","type":"add","patch":"Index: {W}/added.txt\n===================================================================\n--- {W}/added.txt\n+++ {W}/added.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n","additions":2,"deletions":0}],"diagnostics":{},"truncated":false}`},
		{name: "delete and move", files: files, tool: "apply_patch",
			args: `{"patchText":"*** Begin Patch\n*** Delete File: gone.txt\n*** Update File: README.md\n*** Move to: moved/r.md\n@@\n x\n-y\n+Y\n z\n*** End Patch"}`,
			want: "Success. Updated the following files:\nD gone.txt\nM moved/r.md", after: map[string]string{"moved/r.md": "x\nY\nz\n"}},
		{name: "missing update target", files: files, tool: "apply_patch",
			args: `{"patchText":"*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch"}`,
			want: "apply_patch verification failed: Failed to read file to update: {W}/nope.txt", isErr: true},
		{name: "lines not found", files: files, tool: "apply_patch",
			args: `{"patchText":"*** Begin Patch\n*** Update File: README.md\n@@\n-not there\n+b\n*** End Patch"}`,
			want: "apply_patch verification failed: Error: Failed to find expected lines in {W}/README.md:\nnot there", isErr: true},
		{name: "empty", files: files, tool: "apply_patch", args: `{"patchText":"*** Begin Patch\n*** End Patch"}`,
			want: "patch rejected: empty patch", isErr: true},
		{name: "garbage", files: files, tool: "apply_patch", args: `{"patchText":"garbage"}`,
			want: "apply_patch verification failed: Error: Invalid patch format: missing Begin/End markers", isErr: true},
		{name: "delete missing", files: files, tool: "apply_patch", args: `{"patchText":"*** Begin Patch\n*** Delete File: nothing.txt\n*** End Patch"}`,
			want: "apply_patch verification failed: NotFound: FileSystem.readFile ({W}/nothing.txt)", isErr: true},
		{name: "old patch tool", files: files, tool: "patch", args: `{"patchText":"*** Begin Patch\n*** Add File: n.txt\n+n\n*** End Patch"}`,
			want: "Patch applied successfully. 1 files changed:\n  n.txt"},
		{name: "todos", tool: "todowrite",
			args: `{"todos":[{"id":"1","content":"é \u2028 x\"","status":"in_progress","priority":"medium","extra":true},{"content":"b","status":"completed","priority":"low"}]}`,
			want: "[\n  {\n    \"content\": \"é \u2028 x\\\"\",\n    \"status\": \"in_progress\",\n    \"priority\": \"medium\"\n  },\n" +
				"  {\n    \"content\": \"b\",\n    \"status\": \"completed\",\n    \"priority\": \"low\"\n  }\n]",
			meta: `{"todos":[{"content":"é \u2028 x\"","status":"in_progress","priority":"medium"},{"content":"b","status":"completed","priority":"low"}],"truncated":false}`},
		{name: "empty list", tool: "todoread", args: `{}`, want: "[]", meta: `{"todos":[],"truncated":false}`},
	})
}

// The title of todowrite counts open items; todoread returns the last list.
func TestToolTodoState(t *testing.T) {
	ws := newWorkspace(t, nil)
	sess, err := NewToolSession(trajectory.ToolEnv{Workspace: ws, Env: testEnv(ws)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	w, _ := sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "a", Name: "todowrite",
		Arguments: []byte(`{"todos":[{"content":"a","status":"pending","priority":"high"},{"content":"b","status":"completed","priority":"low"}]}`)})
	r, _ := sess.Execute(context.Background(), 2, &trajectory.ToolCall{ID: "b", Name: "todoread", Arguments: []byte(`{}`)})
	if gjson.GetBytes(w.Native, "title").Str != "1 todos" || r.Content != w.Content {
		t.Errorf("todowrite %s / todoread %q", w.Native, r.Content)
	}
}

// Paths under the recorded directory run in the workspace.
func TestPathMapping(t *testing.T) {
	ws := newWorkspace(t, map[string]string{"f.txt": "x\n"})
	sess, err := NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: "/orig/repo", Env: testEnv(ws)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tc := range []struct{ tool, args, want string }{
		{"read", `{"filePath":"/orig/repo/f.txt"}`, "<path>" + ws + "/f.txt</path>"},
		{"bash", `{"command":"cat /orig/repo/f.txt; echo /orig/repository"}`, "x\n/orig/repository\n"},
		{"bash", `{"command":"pwd","workdir":"/orig/repo"}`, ws + "\n"},
	} {
		f, err := sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "c", Name: tc.tool, Arguments: []byte(tc.args)})
		if err != nil || !strings.HasPrefix(f.Content, tc.want) {
			t.Errorf("%s %s = %q, %v; want prefix %q", tc.tool, tc.args, f.Content, err, tc.want)
		}
	}
}

// A call OpenCode refused or aborted is not run again: its recorded error
// is the fresh one, and the workspace stays as it is.
func TestRefusedCallsDoNotRun(t *testing.T) {
	ws := newWorkspace(t, nil)
	sess, err := NewToolSession(trajectory.ToolEnv{Workspace: ws, Env: testEnv(ws)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, msg := range []string{
		"The user rejected permission to use this specific tool call.",
		"The user rejected permission to use this specific tool call with the following feedback: no",
		"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules []",
		"The write tool was called with invalid arguments: x.\nPlease rewrite the input so it satisfies the expected schema.",
		"Tool execution aborted",
	} {
		call := &trajectory.ToolCall{ID: "c", Name: "write", Arguments: []byte(`{"filePath":"` + ws + `/x.txt","content":"x"}`),
			Observation: &trajectory.Observation{Content: msg, IsError: true}}
		f, err := sess.Execute(context.Background(), 1, call)
		if err != nil || f.Content != msg || !f.IsError || f.Native != nil {
			t.Errorf("%q: %+v %v", msg, f, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
			t.Fatalf("%q: the refused write ran", msg)
		}
	}
}
