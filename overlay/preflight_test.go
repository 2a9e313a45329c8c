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

func TestPreflight(t *testing.T) {
	requireOverlay(t)
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	compose := filepath.Join(base, "compose")
	writeTree(t, base, map[string]string{"ws/a": "a", "compose/c": "c", "file": "f", "used/upper/x": "x"})
	must(t, os.Symlink(ws, filepath.Join(base, "ws-link")))
	state := NewLayout(filepath.Join(base, "state"))

	cases := []struct {
		name      string
		cfg       Config
		layout    Layout
		wantCheck string // "" = success
		wantMsg   string
	}{
		{name: "no path", cfg: Config{}, layout: state, wantCheck: "path", wantMsg: "--overlayfs-path"},
		{name: "missing path", cfg: Config{Path: filepath.Join(base, "nope")}, layout: state, wantCheck: "path", wantMsg: "does not exist"},
		{name: "path is a file", cfg: Config{Path: filepath.Join(base, "file")}, layout: state, wantCheck: "path", wantMsg: "is not a directory"},
		{name: "root", cfg: Config{Path: "/"}, layout: state, wantCheck: "path", wantMsg: "over /"},
		{name: "missing compose", cfg: Config{Path: ws, Compose: []string{filepath.Join(base, "nope")}}, layout: state, wantCheck: "path", wantMsg: "compose layer"},
		{name: "compose repeats the path", cfg: Config{Path: ws, Compose: []string{filepath.Join(base, "ws-link")}}, layout: state, wantCheck: "compose", wantMsg: "given twice"},
		{name: "bad commit mode", cfg: Config{Path: ws, Commit: "keep"}, layout: state, wantCheck: "commit", wantMsg: "manual, apply or drop"},
		{name: "state dir inside the workspace", cfg: Config{Path: ws}, layout: NewLayout(filepath.Join(ws, "st")), wantCheck: "state-dir", wantMsg: "outside the workspace"},
		{name: "state dir inside the workspace through a symlink", cfg: Config{Path: ws}, layout: NewLayout(filepath.Join(base, "ws-link", "st")), wantCheck: "state-dir", wantMsg: "inside the lower layer"},
		{name: "state dir inside a compose layer", cfg: Config{Path: ws, Compose: []string{compose}}, layout: NewLayout(compose), wantCheck: "state-dir", wantMsg: compose},
		{name: "workspace inside the state dir", cfg: Config{Path: ws}, layout: Layout{Dir: base, Upper: filepath.Join(base, "u"), Work: filepath.Join(base, "w")}, wantCheck: "state-dir", wantMsg: "inside the state dir"},
		{name: "relative layout", cfg: Config{Path: ws}, layout: Layout{Dir: "st", Upper: "st/u", Work: "st/w"}, wantCheck: "state-dir", wantMsg: "NewLayout"},
		{name: "upper holds an earlier run", cfg: Config{Path: ws}, layout: Layout{Dir: filepath.Join(base, "used"), Upper: filepath.Join(base, "used/upper"), Work: filepath.Join(base, "used/work")}, wantCheck: "upper", wantMsg: "earlier run"},
		{name: "fine", cfg: Config{Path: filepath.Join(base, "ws-link"), Compose: []string{compose}}, layout: state},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Preflight(tc.cfg, tc.layout)
			if tc.wantCheck == "" {
				if err != nil {
					t.Fatal(err)
				}
				want := Config{Path: ws, Compose: []string{compose}, Commit: CommitManual}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("resolved config (-want +got):\n%s", diff)
				}
				return
			}
			var pe *PreflightError
			if !errors.As(err, &pe) || pe.Check != tc.wantCheck || !strings.Contains(pe.Msg, tc.wantMsg) {
				t.Fatalf("error = %v; want check %q mentioning %q", err, tc.wantCheck, tc.wantMsg)
			}
		})
	}
}

func TestPreflightRelativePath(t *testing.T) {
	requireOverlay(t)
	base := t.TempDir()
	writeTree(t, base, map[string]string{"ws/a": "a"})
	t.Chdir(base)
	got, err := Preflight(Config{Path: "ws"}, NewLayout("state"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "ws"); got.Path != want {
		t.Errorf("Path = %q, want %q", got.Path, want)
	}
}

// Checks that need mounts run on a private thread, invisible to the host.
func TestPreflightMountChecks(t *testing.T) {
	requireOverlay(t)
	base := t.TempDir()
	writeTree(t, base, map[string]string{"ws/sub/": "", "ws/a": "a", "ov/lower/": "", "ov/upper/": "", "ov/work/": "", "ov/merged/": ""})
	ws := filepath.Join(base, "ws")
	inPrivateNS(t, func() error {
		// A workspace with a mount point inside.
		if err := unix.Mount("tmpfs", filepath.Join(ws, "sub"), "tmpfs", 0, "size=1m"); err != nil {
			return err
		}
		_, err := Preflight(Config{Path: ws}, NewLayout(filepath.Join(base, "state")))
		var pe *PreflightError
		if !errors.As(err, &pe) || pe.Check != "submounts" || !strings.Contains(pe.Msg, filepath.Join(ws, "sub")) {
			t.Errorf("mount inside the workspace: %v", err)
		}
		if err := unix.Unmount(filepath.Join(ws, "sub"), 0); err != nil {
			return err
		}
		// A state dir on an overlayfs, as inside a Docker container.
		ov := filepath.Join(base, "ov")
		opts := "lowerdir=" + ov + "/lower,upperdir=" + ov + "/upper,workdir=" + ov + "/work"
		if err := unix.Mount("overlay", ov+"/merged", "overlay", 0, opts); err != nil {
			return err
		}
		_, err = Preflight(Config{Path: ws}, NewLayout(filepath.Join(ov, "merged", "state")))
		if !errors.As(err, &pe) || pe.Check != "state-fs" || !strings.Contains(pe.Msg, "tmpfs") {
			t.Errorf("state dir on overlayfs: %v", err)
		}
		return nil
	})
}
