package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

func newTestRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	if opts.Env == nil {
		opts.Env = testEnv
	}
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	r, err := NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// alive reports whether pid names a live (non-zombie) process.
func alive(pid int) bool {
	if unix.Kill(pid, 0) != nil {
		return false
	}
	st, ok := procStat(pid)
	return ok && st.state != 'Z'
}

func waitDead(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return !alive(pid)
}

func TestShellOutputs(t *testing.T) {
	r := newTestRunner(t, Options{})
	dir := t.TempDir()
	type want struct {
		Stdout, Stderr, Combined string
		ExitCode                 int
	}
	tests := []struct {
		name string
		req  ShellRequest
		want want
	}{
		{"exit code and streams", ShellRequest{Command: "echo out; sleep 0.05; echo err >&2; exit 3"},
			want{"out\n", "err\n", "out\nerr\n", 3}},
		{"merged stderr keeps exact order", ShellRequest{Command: "for i in 1 2 3; do echo o$i; echo e$i >&2; done", MergeStderr: true},
			want{"o1\ne1\no2\ne2\no3\ne3\n", "", "o1\ne1\no2\ne2\no3\ne3\n", 0}},
		{"interleaved order", ShellRequest{Command: "echo 1; sleep 0.05; echo 2 >&2; sleep 0.05; echo 3"},
			want{"1\n3\n", "2\n", "1\n2\n3\n", 0}},
		{"argv without shell", ShellRequest{Argv: []string{"printf", "%s|", "a b", "c"}},
			want{"a b|c|", "", "a b|c|", 0}},
		{"stdin is /dev/null", ShellRequest{Command: "cat; echo done"},
			want{"done\n", "", "done\n", 0}},
		{"caller env only", ShellRequest{Command: `echo "${HOME-unset} $FOO"`, Env: append([]string{"FOO=bar"}, testEnv...)},
			want{"unset bar\n", "", "unset bar\n", 0}},
		{"login shell flag", ShellRequest{Command: "echo $0", Shell: []string{"bash", "-c"}},
			want{"bash\n", "", "bash\n", 0}},
		{"killed by signal", ShellRequest{Command: "kill -TERM $$"},
			want{"", "", "", 128 + int(syscall.SIGTERM)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Dir = dir
			res, err := r.Shell(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got := want{res.Stdout.String(), res.Stderr.String(), res.Combined.String(), res.ExitCode}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("result mismatch (-want +got):\n%s", d)
			}
			if res.Cwd != dir || res.Pid <= 0 || res.Duration <= 0 {
				t.Errorf("Cwd=%q Pid=%d Duration=%v", res.Cwd, res.Pid, res.Duration)
			}
		})
	}
}

func TestShellErrors(t *testing.T) {
	r := newTestRunner(t, Options{})
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		req  ShellRequest
		kind Kind
	}{
		{"missing dir", ShellRequest{Command: "true", Dir: filepath.Join(dir, "nope")}, NotFound},
		{"dir is a file", ShellRequest{Command: "true", Dir: file}, NotDir},
		{"relative dir", ShellRequest{Command: "true", Dir: "rel"}, NotAbsolute},
		{"missing program", ShellRequest{Argv: []string{"no-such-program-xyz"}, Dir: dir}, NotFound},
		{"empty command", ShellRequest{Command: "  ", Dir: dir}, InvalidArgument},
		{"both forms", ShellRequest{Command: "x", Argv: []string{"y"}, Dir: dir}, InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Shell(context.Background(), tt.req)
			if got := KindOf(err); got != tt.kind {
				t.Errorf("kind = %v, want %v (err %v)", got, tt.kind, err)
			}
		})
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	r := newTestRunner(t, Options{})
	start := time.Now()
	res, err := r.Shell(context.Background(), ShellRequest{
		Command: "sleep 300 & echo $!; sleep 300",
		Dir:     t.TempDir(),
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timeout took %v", el)
	}
	if !res.TimedOut || res.Signal != syscall.SIGKILL || res.ExitCode != 137 {
		t.Errorf("TimedOut=%v Signal=%v ExitCode=%d, want true SIGKILL 137", res.TimedOut, res.Signal, res.ExitCode)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.String()))
	if err != nil {
		t.Fatalf("grandchild pid: %q", res.Stdout.String())
	}
	if !waitDead(pid, 2*time.Second) {
		t.Errorf("background grandchild %d survived the timeout", pid)
	}
}

func TestShellCancel(t *testing.T) {
	r := newTestRunner(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := r.Shell(ctx, ShellRequest{Command: "sleep 300", Dir: t.TempDir()})
	if err != context.DeadlineExceeded || !res.Canceled || res.TimedOut {
		t.Errorf("err=%v Canceled=%v TimedOut=%v", err, res.Canceled, res.TimedOut)
	}
}

// A background process started by a call survives the call (as it did for
// the agent) and dies, with its whole group, when the Runner is closed.
func TestBackgroundSurvivesUntilClose(t *testing.T) {
	r := newTestRunner(t, Options{})
	start := time.Now()
	res, err := r.Shell(context.Background(), ShellRequest{
		// The grandchild is started by a nested shell, so it is not our
		// child and only the process-group kill can reach it.
		Command: `bash -c 'sleep 300 & echo $!'; echo parent`,
		Dir:     t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("call waited for the background process: %v", el)
	}
	lines := strings.Fields(res.Stdout.String())
	if len(lines) != 2 || lines[1] != "parent" {
		t.Fatalf("stdout %q", res.Stdout.String())
	}
	pid, _ := strconv.Atoi(lines[0])
	if !res.Background || !alive(pid) {
		t.Fatalf("Background=%v alive=%v, want the sleeper running", res.Background, alive(pid))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !waitDead(pid, 2*time.Second) {
		t.Errorf("grandchild %d survived Close", pid)
	}
	if _, err := r.Shell(context.Background(), ShellRequest{Command: "true", Dir: "/"}); KindOf(err) != Closed {
		t.Errorf("after Close: %v, want Kind Closed", err)
	}
}

func TestKillBackgroundAndWaitForEOF(t *testing.T) {
	r := newTestRunner(t, Options{})
	dir := t.TempDir()
	res, err := r.Shell(context.Background(), ShellRequest{Command: "sleep 300 & echo $!", Dir: dir, KillBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(res.Stdout.String()))
	if !res.Background || !waitDead(pid, 2*time.Second) {
		t.Errorf("KillBackground: Background=%v, pid %d alive=%v", res.Background, pid, alive(pid))
	}

	// Python's communicate() waits for the pipes to close, so a background
	// writer holds the call and its late output is part of the result.
	start := time.Now()
	res, err = r.Shell(context.Background(), ShellRequest{Command: "(sleep 0.3; echo late) & echo early", Dir: dir, WaitForEOF: true})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || res.Stdout.String() != "early\nlate\n" {
		t.Errorf("WaitForEOF: took %v, stdout %q", el, res.Stdout.String())
	}
	res, err = r.Shell(context.Background(), ShellRequest{Command: "(sleep 0.3; echo late) & echo early", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.String() != "early\n" {
		t.Errorf("default: stdout %q, want only the output before the shell exited", res.Stdout.String())
	}
}

func TestOutputCapAndLog(t *testing.T) {
	r := newTestRunner(t, Options{})
	log := filepath.Join(t.TempDir(), "logs", "call.log")
	res, err := r.Shell(context.Background(), ShellRequest{
		Command:   `for i in $(seq 1 2000); do echo "line $i"; done`,
		Dir:       t.TempDir(),
		MaxOutput: 100,
		LogPath:   log,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Stdout
	if !res.Truncated() || o.Lines != 2000 || len(o.Data) != 100 || o.OmitAt != 50 || o.Omitted != o.Total-100 {
		t.Errorf("cap: Lines=%d len=%d OmitAt=%d Omitted=%d Total=%d", o.Lines, len(o.Data), o.OmitAt, o.Omitted, o.Total)
	}
	if !strings.HasPrefix(string(o.Head()), "line 1\nline 2\n") || !strings.HasSuffix(string(o.Tail()), "line 1999\nline 2000\n") {
		t.Errorf("head %q tail %q", o.Head(), o.Tail())
	}
	full, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(full)) != o.Total || !strings.HasSuffix(string(full), "line 2000\n") {
		t.Errorf("log has %d bytes, want %d", len(full), o.Total)
	}
}

func TestSessionCwdCarriesOver(t *testing.T) {
	r := newTestRunner(t, Options{})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"a/b", "c"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	s, err := r.NewSession(root)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		cmd      string
		wantOut  string
		wantCwd  string
		wantCode int
	}{
		{"cd a", "", "a", 0},
		{"pwd", root + "/a\n", "a", 0},
		{"cd b && export X=1", "", "a/b", 0},
		{"echo ${X-unset}", "unset\n", "a/b", 0}, // only the directory carries over
		{"cd ../../c; exit 4", "", "c", 4},       // exit still records where it ended
		{"cd /nonexistent", "", "c", 1},
		{"(cd ..)", "", "c", 0}, // a subshell does not move the session
		{"echo (", "", "c", 2},  // syntax error: nothing ran
	}
	for _, st := range steps {
		res, err := s.Shell(context.Background(), ShellRequest{Command: st.cmd})
		if err != nil {
			t.Fatalf("%q: %v", st.cmd, err)
		}
		want := filepath.Join(root, st.wantCwd)
		if res.Stdout.String() != st.wantOut || res.Cwd != want || s.Cwd() != want || res.ExitCode != st.wantCode {
			t.Errorf("%q: stdout %q cwd %q code %d; want %q %q %d", st.cmd, res.Stdout.String(), res.Cwd, res.ExitCode, st.wantOut, want, st.wantCode)
		}
	}
	// The shell's own messages must not show the cwd machinery.
	plain, _ := r.Shell(context.Background(), ShellRequest{Command: "echo (", Dir: root})
	sess, _ := s.Shell(context.Background(), ShellRequest{Command: "echo ("})
	if plain.Stderr.String() != sess.Stderr.String() || !strings.Contains(plain.Stderr.String(), "line 1:") {
		t.Errorf("syntax error differs:\nplain %q\nsession %q", plain.Stderr.String(), sess.Stderr.String())
	}
	// Child bash processes must not inherit the trap file.
	res, _ := s.Shell(context.Background(), ShellRequest{Command: `bash -c 'cd /; echo ${BASH_ENV-unset}'`})
	if res.Stdout.String() != "unset\n" || s.Cwd() != filepath.Join(root, "c") {
		t.Errorf("child bash: stdout %q cwd %q", res.Stdout.String(), s.Cwd())
	}
	if err := s.SetCwd(root); err != nil || s.Cwd() != root {
		t.Errorf("SetCwd: %v %q", err, s.Cwd())
	}

	// Shells other than bash get the trap as a first script line.
	sh, err := r.NewSession(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err = sh.Shell(context.Background(), ShellRequest{Command: "cd c; echo $0", Shell: []string{"/bin/sh", "-c"}})
	if err != nil || res.Stdout.String() != "/bin/sh\n" || sh.Cwd() != filepath.Join(root, "c") {
		t.Errorf("sh session: %v stdout %q cwd %q", err, res.Stdout.String(), sh.Cwd())
	}

	// The stateless form never carries anything over.
	r.Shell(context.Background(), ShellRequest{Command: "cd a", Dir: root})
	res, _ = r.Shell(context.Background(), ShellRequest{Command: "pwd", Dir: root})
	if res.Stdout.String() != root+"\n" {
		t.Errorf("stateless pwd %q", res.Stdout.String())
	}
}

// A flood of output (`timeout 3 yes`) writes at most MaxLogBytes to the
// full log, which then ends with the documented marker.
func TestLogCap(t *testing.T) {
	old := MaxLogBytes
	MaxLogBytes = 1 << 20
	defer func() { MaxLogBytes = old }()
	r := newTestRunner(t, Options{})
	log := filepath.Join(t.TempDir(), "call.log")
	res, err := r.Shell(context.Background(), ShellRequest{Command: "yes | head -c 5000000", Dir: "/", LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf(LogCapMarker, MaxLogBytes, res.Combined.Total-MaxLogBytes)
	if res.Combined.Total != 5000000 || int64(len(full)) != MaxLogBytes+int64(len(marker)) || !strings.HasSuffix(string(full), marker) {
		t.Errorf("log of %d bytes (output %d), want %d bytes ending in %q", len(full), res.Combined.Total, MaxLogBytes+int64(len(marker)), marker)
	}
}

// With CarryExports, what a call exports the next sees (OpenHands keeps one
// shell); what it does not export, and a killed call's exports, do not.
func TestSessionCarryExports(t *testing.T) {
	r := newTestRunner(t, Options{Env: []string{"PATH=/usr/bin:/bin", "BASE=1"}})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	s, err := r.NewSession(root)
	if err != nil {
		t.Fatal(err)
	}
	s.CarryExports = true
	steps := []struct{ cmd, want string }{
		{"export X='a b'; Y=2", ""},
		{`echo "$X|${Y-unset}|$BASE"`, "a b|unset|1\n"},
		{"export X=c; sleep 5", ""}, // killed by its timeout: not saved
		{`echo "$X"`, "a b\n"},
		{"echo ( ", ""}, // a syntax error keeps what was saved
		{`echo "$X"`, "a b\n"},
	}
	for _, st := range steps {
		res, err := s.Shell(context.Background(), ShellRequest{Command: st.cmd, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatalf("%q: %v", st.cmd, err)
		}
		if res.Stdout.String() != st.want {
			t.Errorf("%q: stdout %q, want %q", st.cmd, res.Stdout.String(), st.want)
		}
	}
}

// A TTY shell sees a terminal of the size asked for, stderr in the same
// stream, \r\n line ends.
func TestShellTTY(t *testing.T) {
	r := newTestRunner(t, Options{Env: []string{"PATH=/usr/bin:/bin"}})
	res, err := r.Shell(context.Background(), ShellRequest{Command: "[ -t 1 ] && stty size; echo err >&2", Dir: t.TempDir(), TTY: true, Rows: 200, Cols: 256, WaitForEOF: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Combined.String(); got != "200 256\r\nerr\r\n" || res.Stderr.String() != "" {
		t.Errorf("combined %q stderr %q", got, res.Stderr.String())
	}
}
