//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
)

var (
	record = flag.Bool("record", false, "copy the recorded sessions into testdata/e2e/sessions/<agent>@<version>")
	only   = flag.String("record-release", "", "with -record: copy only these recordings (comma-separated agent@version)")
	keep   = flag.Bool("keep", false, "keep the work directories under $TMPDIR/pvisor-e2e")
)

// fakeKey is the API key handed to the CLIs; the fake model ignores it and never
// records credential headers.
const fakeKey = "pvisor-e2e-fake-key"

// run is one CLI invocation in its own directory tree:
//
//	<root>/repo   the git repository the agent works in
//	<root>/home   HOME and every config/data dir of the CLI
//	<root>/tmp    TMPDIR
//
// root is fixed per agent ($TMPDIR/pvisor-e2e/<agent>) so recorded sessions carry
// the same paths every time they are regenerated.
type run struct {
	agent  *agentSpec
	bin    string         // absolute path of the CLI
	rel    tested.Release // the release recorded (recordAgent)
	root   string
	repo   string
	home   string
	url    string // fake model base URL, no /v1
	env    []string
	argv   []string
	stdout []byte
	stderr []byte
	took   time.Duration
	fake   *fakemodel.Server
	config map[string]string // config files written under home, by path relative to it
}

func projectRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// e2eDir is where install-clis.sh installs the CLIs (PVISOR_E2E_DIR, as for
// the script).
func e2eDir(t testing.TB) string {
	if d := os.Getenv("PVISOR_E2E_DIR"); d != "" {
		return d
	}
	return filepath.Join(projectRoot(t), ".e2e")
}

func newRun(t *testing.T, a *agentSpec, bin string) *run {
	t.Helper()
	root := filepath.Join(os.TempDir(), "pvisor-e2e", a.name)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	r := &run{agent: a, bin: bin, root: root, repo: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	for _, d := range []string{r.repo, r.home, filepath.Join(root, "tmp"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !*keep {
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	return r
}

// provideFd puts an fd that Pi's find tool accepts on the run's PATH. Pi 0.73.1
// passes --no-require-git, which fd learned in 8.7; Debian 12 ships fdfind 8.6. The
// wrapper drops the flag, which changes nothing inside a git repository (the flag
// only matters outside one). Pi would otherwise try to download fd, and fail.
func (r *run) provideFd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("fd"); err == nil {
		return
	}
	fdfind, err := exec.LookPath("fdfind")
	if err != nil {
		t.Skip("neither fd nor fdfind on PATH: run testdata/e2e/install-clis.sh (installs Debian fd-find)")
	}
	help, _ := exec.Command(fdfind, "--help").Output()
	script := "#!/bin/sh\nexec " + fdfind + " \"$@\"\n"
	if !bytes.Contains(help, []byte("--no-require-git")) {
		script = "#!/bin/sh\n# fd < 8.7 has no --no-require-git; drop it (see provideFd).\n" +
			"for a; do shift; [ \"$a\" = --no-require-git ] || set -- \"$@\" \"$a\"; done\n" +
			"exec " + fdfind + " \"$@\"\n"
	}
	if err := os.WriteFile(filepath.Join(r.root, "bin", "fd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// startFake serves the agent's script on 127.0.0.1 in the current (private)
// network namespace.
func (r *run) startFake(t *testing.T) {
	t.Helper()
	script := r.agent.script.Expand(map[string]string{"CWD": r.repo})
	if err := script.Validate(); err != nil {
		t.Fatalf("script for %s: %v", r.agent.name, err)
	}
	logf, err := os.Create(filepath.Join(r.root, "fake-requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	r.fake = fakemodel.New(script, fakemodel.WithLog(logf), fakemodel.WithReplyOffset(0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r.fake, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + ln.Addr().String()
}

// baseEnv is the whole environment of a CLI: nothing is inherited, so a developer's
// real API keys, proxies or config dirs can never leak into a recording.
func (r *run) baseEnv() []string {
	return []string{
		"PATH=" + filepath.Join(r.root, "bin") + ":" + filepath.Dir(r.bin) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + r.home,
		"USER=root",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"TMPDIR=" + filepath.Join(r.root, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(r.home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(r.home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(r.home, ".cache"),
		"NO_PROXY=127.0.0.1,localhost,::1",
		"no_proxy=127.0.0.1,localhost,::1",
		"GIT_CONFIG_NOSYSTEM=1",
	}
}

// exec runs the CLI (or a helper command of it) in the repo with the run's
// environment and stdin /dev/null (codex exec waits for stdin otherwise), in its own
// process group, which is killed on timeout and once the command is done, so no
// helper the CLI left behind outlives the run. It must be called from the goroutine
// that entered the namespace, so the child inherits it.
func (r *run) exec(ctx context.Context, argv ...string) (stdout, stderr []byte, err error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.repo
	cmd.Env = r.env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	// Wait for the CLI to exit but leave it unreaped: its pid is the group id, and
	// a zombie leader keeps that id from being reused while the group is killed.
	var info unix.Siginfo
	for {
		if werr := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); werr != unix.EINTR {
			break
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH when nothing is left
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out: %w", filepath.Base(argv[0]), ctx.Err())
	}
	return so.Bytes(), se.Bytes(), err
}

// write creates a file under the run's root; files under home/ are the CLI's config
// and go into the manifest.
func (r *run) write(t *testing.T, rel, content string) {
	t.Helper()
	if home, ok := strings.CutPrefix(filepath.ToSlash(rel), "home/"); ok {
		if r.config == nil {
			r.config = map[string]string{}
		}
		r.config[home] = content
	}
	p := filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeRepo creates the initial repository with one commit whose hash is the same on
// every machine (fixed author, committer and dates; no hook templates).
func (r *run) makeRepo(t *testing.T) {
	t.Helper()
	// In one order every time: the files get distinct mtimes, and
	// Claude Code's Glob lists them oldest first (a map's order made the
	// 2.1.197 and 2.1.332 recordings list them differently).
	for _, name := range slices.Sorted(maps.Keys(initialFiles)) {
		r.write(t, filepath.Join("repo", name), initialFiles[name])
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=pvisor e2e", "-c", "user.email=e2e@pvisor.invalid",
			"-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = r.repo
		cmd.Env = append(r.baseEnv(), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main", "--template=")
	git("add", "-A")
	git("commit", "-q", "-m", "Initial greeter")
}

// tarDir packs dir into a gzip'd tar with fixed times and owners, so an unchanged
// tree packs to the same bytes.
func tarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		default:
			return fmt.Errorf("tar %s: only files and directories are expected in the initial repo", rel)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	return buf.Bytes(), err
}

func writeJSONFile(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// findFiles returns the files under dir whose base name matches pattern.
func findFiles(dir, pattern string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
