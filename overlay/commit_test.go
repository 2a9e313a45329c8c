//go:build linux

package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// mergedSnapshot mounts the layers on a private thread and snapshots what
// the kernel shows: the reference that apply must reproduce.
func mergedSnapshot(t *testing.T, cfg Config, l Layout) map[string]node {
	t.Helper()
	var snap map[string]node
	inPrivateNS(t, func() error {
		if err := Mount(cfg, l); err != nil {
			return err
		}
		s, err := snapshot(cfg.Path)
		if err != nil {
			return err
		}
		snap = s
		return Unmount(cfg.Path)
	})
	return snap
}

func TestApplyEqualsKernelMergedView(t *testing.T) {
	requireOverlay(t)
	cases := []struct {
		name  string
		lower map[string]string
		upper map[string]string
		tweak func(t *testing.T, upper string)
	}{
		{
			name:  "type changes both ways",
			lower: map[string]string{"was-file": "f", "was-dir/x": "x", "was-dir/sub/y": "y"},
			upper: map[string]string{"was-file": "!opaque", "was-file/in": "i", "was-dir": "now a file"},
		},
		{
			name:  "opaque directory with a hidden subtree",
			lower: map[string]string{"d/a": "a", "d/b": "b", "d/sub/c": "c", "d/sub/keep": "k", "other": "o"},
			upper: map[string]string{"d": "!opaque", "d/a": "a2", "d/sub/": "", "d/sub/new": "n"},
		},
		{
			name:  "deletions and a symlink replacing a file",
			lower: map[string]string{"f": "f", "gone/x": "x", "gone/y/z": "z", "ln": "was a file"},
			upper: map[string]string{"f": "!whiteout", "gone": "!whiteout", "ln": "->f"},
		},
		{
			name:  "hard links, owner, setuid and a fifo",
			lower: map[string]string{"keep": "k"},
			upper: map[string]string{"h1": "linked"},
			tweak: func(t *testing.T, upper string) {
				must(t, os.Link(filepath.Join(upper, "h1"), filepath.Join(upper, "h2")))
				must(t, os.WriteFile(filepath.Join(upper, "suid"), []byte("#!/bin/sh\n"), 0o644))
				must(t, os.Chown(filepath.Join(upper, "suid"), 1000, 1000))
				must(t, os.Chmod(filepath.Join(upper, "suid"), 0o4755))
				must(t, unix.Mkfifo(filepath.Join(upper, "fifo"), 0o620))
			},
		},
		{
			name:  "mode of the workspace root",
			lower: map[string]string{"f": "f"},
			tweak: func(t *testing.T, upper string) { must(t, os.Chmod(upper, 0o711)) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, l := layers(t, tc.lower)
			writeLayer(t, l.Upper, cfg.Path, tc.upper)
			if tc.tweak != nil {
				tc.tweak(t, l.Upper)
			}
			want := mergedSnapshot(t, cfg, l)
			cfg.Commit = CommitApply
			rep, err := Commit(cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Changes) == 0 {
				t.Fatal("no changes listed")
			}
			if diff := cmp.Diff(want, mustSnapshot(t, cfg.Path)); diff != "" {
				t.Errorf("applied workspace differs from the merged view (-merged +applied):\n%s", diff)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestApplyCopiesXattrsAndCreatesComposeParents(t *testing.T) {
	requireOverlay(t)
	cfg, l := layers(t, map[string]string{"top": "t"}, map[string]string{"lib/util": "u"})
	writeLayer(t, l.Upper, cfg.Path, map[string]string{"lib/": "", "lib/util": "u2", "lib/new/": "", "lib/new/n": "n"})
	must(t, os.Chmod(filepath.Join(l.Upper, "lib"), 0o750))
	must(t, unix.Setxattr(filepath.Join(l.Upper, "lib/util"), "user.note", []byte("kept"), 0))
	must(t, unix.Setxattr(filepath.Join(l.Upper, "lib/util"), "trusted.overlay.origin", []byte("x"), 0))
	cfg.Commit = CommitApply
	rep, err := Commit(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{"lib", Modified, TypeDir}, {"lib/new", Added, TypeDir}, {"lib/new/n", Added, TypeFile}, {"lib/util", Modified, TypeFile}}
	if diff := cmp.Diff(want, rep.Changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	got := mustSnapshot(t, cfg.Path)
	if n := got["lib"]; n.Type != TypeDir || n.Perm != 0o750 {
		t.Errorf("lib = %+v, want a 0750 directory", n)
	}
	if n := got["lib/util"]; n.Size != 2 {
		t.Errorf("lib/util = %+v, want the new 2-byte content", n)
	}
	buf := make([]byte, 16)
	if n, err := unix.Lgetxattr(filepath.Join(cfg.Path, "lib/util"), "user.note", buf); err != nil || string(buf[:n]) != "kept" {
		t.Errorf("user.note = %q, %v; want %q", buf[:max(n, 0)], err, "kept")
	}
	if _, err := unix.Lgetxattr(filepath.Join(cfg.Path, "lib/util"), "trusted.overlay.origin", nil); err == nil {
		t.Error("overlayfs's own xattr was copied into the workspace")
	}
	if _, err := os.Stat(filepath.Join(cfg.Compose[0], "lib/util")); err != nil {
		t.Errorf("compose layer lost lib/util: %v", err)
	}
}

func TestApplyStaysInsideWorkspace(t *testing.T) {
	requireOverlay(t)
	cfg, l := layers(t, map[string]string{"f": "f"})
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("v"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(cfg.Path, "esc")))
	writeLayer(t, l.Upper, cfg.Path, map[string]string{"esc/": "", "esc/pwn": "p"})

	// Change lists that would go through the planted symlink: a delete
	// must fail, a write replaces the symlink with the upper's directory.
	if err := apply(cfg.Path, l.Upper, []Change{{"esc/victim", Deleted, TypeFile}}); err == nil {
		t.Error("apply deleted through a symlink leading out of the workspace")
	}
	if err := apply(cfg.Path, l.Upper, []Change{{"esc/pwn", Added, TypeFile}}); err != nil {
		t.Fatal(err)
	}
	if names, _ := readNames(outside); !cmp.Equal(names, []string{"victim"}) {
		t.Errorf("outside the workspace: %v, want only the untouched victim", names)
	}
	if fi, err := os.Lstat(filepath.Join(cfg.Path, "esc")); err != nil || !fi.IsDir() {
		t.Errorf("esc = %v, %v; want the directory from the upper layer", fi, err)
	}
}

func TestCommitManualAndDrop(t *testing.T) {
	requireOverlay(t)
	for _, mode := range []CommitMode{CommitManual, CommitDrop, ""} {
		t.Run(string(mode), func(t *testing.T) {
			cfg, l := layers(t, map[string]string{"f": "f"})
			writeLayer(t, l.Upper, cfg.Path, map[string]string{"f": "changed", "n": "new"})
			before := mustSnapshot(t, cfg.Path)
			cfg.Commit = mode
			rep, err := Commit(cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			want := Report{Mode: mode, Changes: []Change{{"f", Modified, TypeFile}, {"n", Added, TypeFile}}}
			if mode != CommitDrop {
				want.Mode, want.Upper = CommitManual, l.Upper
			}
			if diff := cmp.Diff(want, rep); diff != "" {
				t.Errorf("Report (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, mustSnapshot(t, cfg.Path)); diff != "" {
				t.Errorf("workspace changed (-before +after):\n%s", diff)
			}
			_, err = os.Stat(filepath.Join(l.Upper, "n"))
			if kept := err == nil; kept != (mode != CommitDrop) {
				t.Errorf("upper layer kept = %v after %q", kept, mode)
			}
		})
	}
}

func TestCommitRefusals(t *testing.T) {
	requireOverlay(t)
	cfg, l := layers(t, map[string]string{"f": "f"})
	cfg.Commit = "merge"
	if _, err := Commit(cfg, l); err == nil || !strings.Contains(err.Error(), "manual, apply or drop") {
		t.Errorf("bad mode: %v", err)
	}
	cfg.Commit = CommitApply
	childSpec = &spec{}
	defer func() { childSpec = nil }()
	if _, err := Commit(cfg, l); err == nil || !strings.Contains(err.Error(), "after the isolated run") {
		t.Errorf("inside the namespace: %v", err)
	}
	if _, err := Changes(cfg, l); err == nil {
		t.Error("Changes ran inside the namespace")
	}
	var pe *PreflightError
	if _, err := Preflight(cfg, l); !errors.As(err, &pe) || pe.Check != "nested" {
		t.Errorf("Preflight inside the namespace: %v", err)
	}
}
