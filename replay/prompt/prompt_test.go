package prompt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	toolrun "github.com/pvisor/pvisor/run"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newExec(t *testing.T, iso toolrun.Isolation) *RunExecutor {
	t.Helper()
	e, err := NewExecutor(ExecOptions{Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Isolation: iso, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestSourceCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  Source
		want string // "" means no error
	}{
		{"text", Source{Text: "go on"}, ""},
		{"file", Source{File: "p.md", Args: []Arg{{"A", "1"}}}, ""},
		{"both", Source{Text: "x", File: "p.md"}, "--prompt and --prompt-file are mutually exclusive"},
		{"both, own flag names", Source{Text: "x", File: "p.md", TextFlag: "--boundary-user-prompt", FileFlag: "--boundary-user-prompt-file"},
			"--boundary-user-prompt and --boundary-user-prompt-file are mutually exclusive"},
		{"neither", Source{}, "no prompt: pass --prompt TEXT or --prompt-file FILE"},
		{"blank text", Source{Text: " \n"}, "non-whitespace"},
		{"args with text", Source{Text: "x", Args: []Arg{{"A", "1"}}}, "used as written: use --prompt-file"},
		{"duplicate arg", Source{File: "p.md", Args: []Arg{{"A", "1"}, {"A", "2"}}}, "--prompt-arg A is given twice"},
		{"bad key", Source{File: "p.md", Args: []Arg{{"1A", "1"}}}, "the key must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.src.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	if err := (Source{}).Check(); !errors.Is(err, ErrNoPrompt) {
		t.Errorf("no prompt: %v is not ErrNoPrompt", err)
	}
}

func TestParseArg(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Arg
		err  string
	}{
		{"ISSUE=42", Arg{"ISSUE", "42"}, ""},
		{"A=b=c", Arg{"A", "b=c"}, ""},
		{"EMPTY=", Arg{"EMPTY", ""}, ""},
		{"noequals", Arg{}, "expected KEY=VALUE"},
		{"a-b=1", Arg{}, "the key must be"},
		{"=1", Arg{}, "the key must be"},
	} {
		got, err := ParseArg(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// Placeholders, built-ins, their errors and warnings, with no command.
func TestLoadSubstitution(t *testing.T) {
	dir := t.TempDir()
	b := BuiltIns{KeySessionID: "s-1", KeyAgent: "codex", KeyWorkspace: "/ws"}
	for _, tc := range []struct {
		name     string
		file     string
		args     []Arg
		want     string
		warnings []string
		err      string
	}{
		{name: "args and built-ins", file: "Fix issue {{ISSUE}} in {{WORKSPACE}}.\nSession {{SESSION_ID}} ({{AGENT}}), again {{ISSUE}}.\n",
			args: []Arg{{"ISSUE", "#7"}}, want: "Fix issue #7 in /ws.\nSession s-1 (codex), again #7.\n"},
		{name: "values are not re-scanned", file: "{{A}}", args: []Arg{{"A", "{{B}}"}, {"B", "no"}}, want: "{{B}}",
			warnings: []string{"--prompt-arg B is not used by p.md (no {{B}} in it)"}},
		{name: "not a placeholder", file: "{{ spaced }} {{1X}} {X}", want: "{{ spaced }} {{1X}} {X}"},
		{name: "unused arg", file: "plain", args: []Arg{{"EXTRA", "1"}}, want: "plain",
			warnings: []string{"--prompt-arg EXTRA is not used by p.md (no {{EXTRA}} in it)"}},
		{name: "missing value names key and line", file: "one\ntwo\nthree {{TICKET}}\n{{OTHER}} and {{TICKET}}",
			err: "p.md:3: {{TICKET}} has no value: pass --prompt-arg TICKET=VALUE; " + filepath.Join(dir, "p.md") + ":4: {{OTHER}} has no value"},
		{name: "built-in cannot be overridden", file: "{{AGENT}}", args: []Arg{{"AGENT", "claude"}},
			err: "--prompt-arg AGENT: AGENT is a built-in argument and cannot be overridden"},
		{name: "absent built-in stays reserved", file: "{{TARGET_BRANCH}}", args: []Arg{{"TARGET_BRANCH", "main"}},
			err: "TARGET_BRANCH is a built-in argument"},
		{name: "absent built-in is missing", file: "{{TARGET_BRANCH}}", err: "{{TARGET_BRANCH}} has no value"},
		{name: "empty file", file: " \n\n", err: "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "p.md", tc.file)
			tpl, err := Load(Source{File: p, Args: tc.args}, b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text, ok := tpl.Text()
			if !ok || text != tc.want {
				t.Errorf("text %q (%v), want %q", text, ok, tc.want)
			}
			if d := cmp.Diff(tc.warnings, tpl.Warnings()); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			res, err := tpl.Expand(context.Background(), dir, nil)
			if err != nil || res.Text != tc.want {
				t.Errorf("expand without commands: %q, %v", res.Text, err)
			}
		})
	}
}

// Inline text is used as written: no placeholder, no command.
func TestInlineTextVerbatim(t *testing.T) {
	const text = "{{AGENT}} !`touch x`"
	ws := t.TempDir()
	res, err := Resolve(context.Background(), Source{Text: text}, BuiltIns{KeyAgent: "pi"}, ws, newExec(t, toolrun.Isolation{}))
	if err != nil || res.Text != text || len(res.Expansions) != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Fatal("inline text ran a command")
	}
}

func TestPromptFileMustBeRegularAndSmall(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := writeFile(t, dir, "big.md", strings.Repeat("x", MaxFileBytes+1))
	many := writeFile(t, dir, "many.md", strings.Repeat("!`true` ", MaxExpansions+1))
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file"},
		{dir, "directory"},
		{filepath.Join(dir, "missing.md"), "no such file"},
		{big, "over the 1048576-byte limit"},
		{many, "33 !`command` expressions, over the limit of 32"},
	} {
		_, err := Load(Source{File: tc.path, FileFlag: "--boundary-user-prompt-file"}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: error %v, want %q and the path", tc.path, err, tc.want)
		}
	}
}

// Expansion with the default executor: commands run in the workspace,
// their output replaces them, failures name the command, exit code and
// stderr.
func TestExpand(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, ws, "notes.txt", "from the workspace\n")
	e := newExec(t, toolrun.Isolation{})
	for _, tc := range []struct {
		name, file string
		args       []Arg
		want       string
		commands   []string
		err        string
	}{
		{name: "output replaces the expression", file: "Notes: !`cat notes.txt`\nDir: !`pwd`\n",
			want: "Notes: from the workspace\nDir: " + ws + "\n", commands: []string{"cat notes.txt", "pwd"}},
		{name: "placeholder in a command is one quoted word", file: "!`printf '%s|' {{A}}`", args: []Arg{{"A", "x y; echo z"}},
			want: "x y; echo z|", commands: []string{`printf '%s|' 'x y; echo z'`}},
		{name: "quote in a value", file: "!`printf %s {{A}}`", args: []Arg{{"A", "it's"}}, want: "it's"},
		{name: "non-zero exit", file: "a\nb !`echo oops >&2; exit 3`", err: "p.md:2: !`echo oops >&2; exit 3` exited 3: oops"},
		{name: "every failure is reported", file: "!`exit 4` !`exit 5`", err: "exited 4 (no stderr)\n"},
		{name: "empty after expansion", file: "!`true`", err: "empty after expansion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "p.md", tc.file)
			res, err := Resolve(context.Background(), Source{File: p, Args: tc.args}, nil, ws, e)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				var xe *ExpansionError
				if strings.Contains(tc.err, "exited") && !errors.As(err, &xe) {
					t.Errorf("%v is no *ExpansionError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tc.want {
				t.Errorf("text %q, want %q", res.Text, tc.want)
			}
			if tc.commands != nil {
				var got []string
				for _, x := range res.Expansions {
					got = append(got, x.Command)
					if x.ExitCode != 0 {
						t.Errorf("%s: exit %d", x.Command, x.ExitCode)
					}
				}
				if d := cmp.Diff(tc.commands, got); d != "" {
					t.Errorf("expansions (-want +got):\n%s", d)
				}
			}
		})
	}
}

// An argument value that looks like an expression is text, never a
// command, wherever it lands.
func TestArgValueNeverRuns(t *testing.T) {
	ws := t.TempDir()
	p := writeFile(t, t.TempDir(), "p.md", "Task: {{TASK}}\nDate: !`echo {{TASK}}`\n")
	res, err := Resolve(context.Background(), Source{File: p, Args: []Arg{{"TASK", "!`touch x`$(touch y)"}}}, nil, ws, newExec(t, toolrun.Isolation{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Task: !`touch x`$(touch y)\nDate: !`touch x`$(touch y)\n"; res.Text != want {
		t.Errorf("text %q, want %q", res.Text, want)
	}
	for _, f := range []string{"x", "y"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("the argument value ran: %s exists", f)
		}
	}
}

// All expressions run at once: each of these two waits for the other's
// file, so run one after the other they would both fail.
func TestExpandRunsInParallel(t *testing.T) {
	ws := t.TempDir()
	wait := func(mine, other string) string {
		return "touch " + mine + "; for i in $(seq 200); do [ -e " + other + " ] && echo ok && exit 0; sleep 0.05; done; exit 1"
	}
	p := writeFile(t, t.TempDir(), "p.md", "!`"+wait("a", "b")+"` !`"+wait("b", "a")+"`")
	res, err := Resolve(context.Background(), Source{File: p}, nil, ws, newExec(t, toolrun.Isolation{}))
	if err != nil || res.Text != "ok ok" {
		t.Fatalf("%q, %v", res.Text, err)
	}
}

// A command that outlives its time limit, or prints past the cap, fails.
func TestExpandLimits(t *testing.T) {
	ws := t.TempDir()
	e, err := NewExecutor(ExecOptions{Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 200 * time.Millisecond, MaxOutput: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct{ file, want string }{
		{"!`sleep 30`", "timed out"},
		{"!`head -c 5000 /dev/zero | tr '\\0' x`", "printed more than the output cap"},
	} {
		p := writeFile(t, t.TempDir(), "p.md", tc.file)
		if _, err := Resolve(context.Background(), Source{File: p}, nil, ws, e); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.file, err, tc.want)
		}
	}
}

// With isolation, as replayed tools: the command is PID 2 of its own PID
// namespace (the init is PID 1) and cannot see pvisor's environment.
func TestExpandIsolated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tool isolation needs root")
	}
	iso := toolrun.Isolation{Enabled: true}
	if err := iso.Probe(); err != nil {
		t.Skipf("namespaces unavailable: %v", err)
	}
	t.Setenv("PVISOR_PROMPT_CANARY", "leak")
	p := writeFile(t, t.TempDir(), "p.md", "init=!`tr '\\0' ' ' </proc/1/cmdline | cut -d' ' -f1` procs=!`ls /proc | grep -c '^[0-9]'` canary=!`echo ${PVISOR_PROMPT_CANARY:-none}`")
	res, err := Resolve(context.Background(), Source{File: p}, nil, t.TempDir(), newExec(t, iso))
	if err != nil {
		t.Fatal(err)
	}
	var procs int
	if _, err := fmt.Sscanf(res.Text, "init=pvisor-tool-init procs=%d canary=none", &procs); err != nil || procs > 5 {
		// init, bash, ls and grep at most
		t.Errorf("isolated expansion: %q (%v)", res.Text, err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@e", "-c", "init.defaultBranch=trunk"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// The branch built-ins come from the real git: the checked-out branch and
// its upstream, else the remote's default branch.
func TestGitBranches(t *testing.T) {
	root := t.TempDir()
	origin := filepath.Join(root, "origin")
	if err := os.Mkdir(origin, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, origin, "init")
	git(t, origin, "commit", "--allow-empty", "-m", "first")
	git(t, root, "clone", "-q", origin, "clone")
	clone := filepath.Join(root, "clone")
	ctx := context.Background()
	check := func(what, wantSrc, wantDst string) {
		t.Helper()
		src, dst := GitBranches(ctx, clone)
		if src != wantSrc || dst != wantDst {
			t.Errorf("%s: source %q target %q, want %q %q", what, src, dst, wantSrc, wantDst)
		}
	}
	check("fresh clone", "trunk", "trunk")
	git(t, clone, "checkout", "-q", "-b", "feature")
	check("branch without upstream", "feature", "trunk")
	git(t, clone, "checkout", "-q", "-b", "topic", "--track", "origin/trunk")
	check("branch tracking origin/trunk", "topic", "trunk")
	git(t, clone, "checkout", "-q", "--detach")
	check("detached HEAD", "", "trunk")
	if src, dst := GitBranches(ctx, root); src != "" || dst != "" {
		t.Errorf("not a repository: %q %q", src, dst)
	}
	b := NewBuiltIns(ctx, "sid", "codex", clone)
	want := BuiltIns{KeySessionID: "sid", KeyAgent: "codex", KeyWorkspace: clone, KeyTargetBranch: "trunk"}
	if d := cmp.Diff(want, b); d != "" {
		t.Errorf("built-ins (-want +got):\n%s", d)
	}
}
