//go:build linux

package overlay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// baseTree is the workspace the integration tests start from.
var baseTree = map[string]string{
	"a.txt":            "alpha\n",
	"b.txt":            "bravo\n",
	"keep.txt":         "keep\n",
	"mode.sh":          "#!/bin/sh\n",
	"owner.txt":        "o\n",
	"d/x.txt":          "x\n",
	"d/sub/y.txt":      "y\n",
	"gone/1.txt":       "1\n",
	"gone/sub/2.txt":   "2\n",
	"replace/old1.txt": "old1\n",
	"replace/old2.txt": "old2\n",
	"tofile/z.txt":     "z\n",
	"link-target.txt":  "target\n",
	"touched.txt":      "touch me\n",
}

// mutate is what the "mutate" worker does in the merged view; mutateChanges
// is exactly what Changes must report for it.
func mutate(ws string) error {
	j := func(p string) string { return filepath.Join(ws, p) }
	steps := []func() error{
		func() error { return os.WriteFile(j("new.txt"), []byte("new\n"), 0o644) },
		func() error { return os.Mkdir(j("newdir"), 0o750) },
		func() error { return os.WriteFile(j("newdir/n.txt"), []byte("n\n"), 0o600) },
		func() error { return os.WriteFile(j("a.txt"), []byte("alpha, edited\n"), 0o644) },
		func() error { return os.Remove(j("b.txt")) },
		func() error { return os.RemoveAll(j("gone")) },
		func() error { return os.Symlink("link-target.txt", j("ln")) },
		func() error { return os.Chmod(j("mode.sh"), 0o755) },
		func() error { return os.Chown(j("owner.txt"), 1000, 1000) },
		func() error { return os.RemoveAll(j("replace")) },
		func() error { return os.Mkdir(j("replace"), 0o755) },
		func() error { return os.WriteFile(j("replace/old1.txt"), []byte("again\n"), 0o644) },
		func() error { return os.WriteFile(j("replace/fresh.txt"), []byte("fresh\n"), 0o644) },
		func() error { return os.RemoveAll(j("tofile")) },
		func() error { return os.WriteFile(j("tofile"), []byte("now a file\n"), 0o644) },
		func() error { // copied up, but not changed
			f, err := os.OpenFile(j("touched.txt"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			return f.Close()
		},
		func() error { return os.WriteFile(j("h1.txt"), []byte("linked\n"), 0o644) },
		func() error { return os.Link(j("h1.txt"), j("h2.txt")) },
		func() error { return os.WriteFile(j("d/sub/y.txt"), []byte("y2\n"), 0o644) },
		func() error { return unix.Mkfifo(j("fifo"), 0o640) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

var mutateChanges = []Change{
	{"a.txt", Modified, TypeFile},
	{"b.txt", Deleted, TypeFile},
	{"d/sub/y.txt", Modified, TypeFile},
	{"fifo", Added, TypeFIFO},
	{"gone", Deleted, TypeDir},
	{"h1.txt", Added, TypeFile},
	{"h2.txt", Added, TypeFile},
	{"ln", Added, TypeSymlink},
	{"mode.sh", Modified, TypeFile},
	{"new.txt", Added, TypeFile},
	{"newdir", Added, TypeDir},
	{"newdir/n.txt", Added, TypeFile},
	{"owner.txt", Modified, TypeFile},
	{"replace", Opaque, TypeDir},
	{"replace/fresh.txt", Added, TypeFile},
	{"replace/old1.txt", Modified, TypeFile},
	{"replace/old2.txt", Deleted, TypeFile},
	{"tofile", Modified, TypeFile},
}

type fixture struct {
	base, ws, scratch string
	cfg               Config
	layout            Layout
	stderr            lockedBuffer
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, ws: filepath.Join(base, "ws"), scratch: filepath.Join(base, "scratch")}
	for _, d := range []string{f.ws, f.scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, f.ws, files)
	f.cfg = Config{Path: f.ws}
	f.layout = NewLayout(filepath.Join(base, "state"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("child stderr:\n%s", f.stderr.String())
		}
	})
	return f
}

func (f *fixture) run(ctx context.Context, extraEnv []string, args ...string) (Exit, error) {
	env := append(childEnv(), envScratch+"="+f.scratch)
	return Run(ctx, f.cfg, f.layout, Options{
		Shared: []string{f.scratch},
		Args:   append([]string{"pvisor-test"}, args...),
		Env:    append(env, extraEnv...),
		Dir:    f.ws,
		Stderr: &f.stderr,
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type runResult struct {
	exit Exit
	err  error
}

func TestRunIsolatesWritesAndDropRestores(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, baseTree)
	f.cfg.Commit = CommitDrop
	before := mustSnapshot(t, f.ws)

	done := make(chan runResult, 1)
	go func() {
		e, err := f.run(context.Background(), nil, "isolate")
		done <- runResult{e, err}
	}()
	if !waitFile(filepath.Join(f.scratch, "ready"), 20*time.Second) {
		t.Fatal("worker never became ready")
	}
	// The worker is alive with its writes made: the host must see none.
	if diff := cmp.Diff(before, mustSnapshot(t, f.ws)); diff != "" {
		t.Errorf("host saw the run's writes (-before +during):\n%s", diff)
	}
	if m := hostMountsAt(t, f.ws); len(m) != 0 {
		t.Errorf("host sees mounts at the workspace: %+v", m)
	}
	touch(filepath.Join(f.scratch, "release"))
	r := <-done
	if r.err != nil || r.exit != (Exit{}) {
		t.Fatalf("Run = %+v, %v", r.exit, r.err)
	}

	var in inside
	readJSON(t, filepath.Join(f.scratch, "inside.json"), &in)
	entries := []string{"a.txt", "b.txt", "d", "gone", "keep.txt", "link-target.txt", "mode.sh", "new.txt", "owner.txt", "replace", "tofile", "touched.txt"}
	want := inside{Cwd: f.ws, FSType: "overlay", Entries: entries, PIDs: 2}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("worker's view (-want +got):\n%s", diff)
	}

	changes, err := Changes(f.cfg, f.layout)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []Change{{"a.txt", Modified, TypeFile}, {"new.txt", Added, TypeFile}}
	if diff := cmp.Diff(wantChanges, changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	rep, err := Commit(f.cfg, f.layout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Report{Mode: CommitDrop, Changes: wantChanges}, rep); diff != "" {
		t.Errorf("Report (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, mustSnapshot(t, f.ws)); diff != "" {
		t.Errorf("drop changed the workspace (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(f.layout.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop left %s: %v", f.layout.Dir, err)
	}
}

func TestApplyReproducesMergedView(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, baseTree)
	f.cfg.Commit = CommitApply
	if e, err := f.run(context.Background(), nil, "mutate"); err != nil || e != (Exit{}) {
		t.Fatalf("Run = %+v, %v", e, err)
	}
	changes, err := Changes(f.cfg, f.layout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mutateChanges, changes); diff != "" {
		t.Fatalf("Changes (-want +got):\n%s", diff)
	}
	var merged map[string]node
	readJSON(t, filepath.Join(f.scratch, "merged.json"), &merged)

	rep, err := Commit(f.cfg, f.layout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Report{Mode: CommitApply, Changes: mutateChanges}, rep); diff != "" {
		t.Errorf("Report (-want +got):\n%s", diff)
	}
	// Applied workspace == what the run saw, entry by entry: the listed
	// changes landed and nothing else moved.
	if diff := cmp.Diff(merged, mustSnapshot(t, f.ws)); diff != "" {
		t.Errorf("workspace after apply differs from the merged view (-merged +applied):\n%s", diff)
	}
	if _, err := os.Stat(f.layout.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("apply left %s: %v", f.layout.Dir, err)
	}
}

func TestComposeLayersAreVisibleAndReadOnly(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, map[string]string{"a.txt": "ws-a\n", "keep.txt": "keep\n"})
	compose := filepath.Join(f.base, "compose")
	writeTree(t, compose, map[string]string{"a.txt": "c-a\n", "c-only.txt": "c\n", "lib/util.txt": "u\n"})
	f.cfg.Compose = []string{compose}
	f.cfg.Commit = CommitApply
	composeBefore := mustSnapshot(t, compose)

	if e, err := f.run(context.Background(), nil, "compose"); err != nil || e != (Exit{}) {
		t.Fatalf("Run = %+v, %v", e, err)
	}
	var seen map[string]string
	readJSON(t, filepath.Join(f.scratch, "seen.json"), &seen)
	wantSeen := map[string]string{"a.txt": "ws-a\n", "c-only.txt": "c\n", "lib/util.txt": "u\n"}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("merged view (-want +got):\n%s", diff)
	}
	rep, err := Commit(f.cfg, f.layout)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []Change{{"c-only.txt", Deleted, TypeFile}, {"lib/util.txt", Modified, TypeFile}}
	if diff := cmp.Diff(wantChanges, rep.Changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(f.ws, "lib/util.txt"))
	if err != nil || string(got) != "u2\n" {
		t.Errorf("applied lib/util.txt = %q, %v; want %q", got, err, "u2\n")
	}
	if diff := cmp.Diff(composeBefore, mustSnapshot(t, compose)); diff != "" {
		t.Errorf("compose layer changed (-before +after):\n%s", diff)
	}
}

// Batches run many replays of one workspace at once, each in its own
// overlay.
func TestParallelRunsShareTheWorkspace(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	names := []string{"one", "two", "three"}
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			l := NewLayout(filepath.Join(f.base, "state-"+name))
			e, err := Run(context.Background(), f.cfg, l, Options{Args: []string{"x", "write", name}, Env: childEnv(), Stderr: &f.stderr})
			if err == nil && e != (Exit{}) {
				err = fmt.Errorf("exit %+v", e)
			}
			if err == nil {
				var got []Change
				if got, err = Changes(f.cfg, l); err == nil && !cmp.Equal(got, []Change{{name, Added, TypeFile}}) {
					err = fmt.Errorf("run %s saw changes %v", name, got)
				}
			}
			errs <- err
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestRunReportsMountFailure(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	_, err := f.run(context.Background(), []string{envBreakInit + "=1"}, "linger", "exit3")
	var se *SetupError
	if !errors.As(err, &se) || se.Stage != "mount" || !strings.Contains(se.Message, f.layout.Upper) {
		t.Fatalf("Run error = %v; want a mount SetupError naming %s", err, f.layout.Upper)
	}
	if _, err := os.Stat(filepath.Join(f.scratch, "ready")); err == nil {
		t.Error("the worker ran although the mount failed")
	}
}

func TestRunPreflightFailsFast(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	f.layout = NewLayout(filepath.Join(f.ws, ".state"))
	_, err := f.run(context.Background(), nil, "noop")
	var pe *PreflightError
	if !errors.As(err, &pe) || pe.Check != "state-dir" {
		t.Fatalf("Run error = %v; want a state-dir PreflightError", err)
	}
	if _, err := os.Stat(f.layout.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("preflight failure still created %s", f.layout.Dir)
	}
}
