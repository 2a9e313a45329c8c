//go:build linux

package overlay

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// Layer specs for synthetic layers, as overlayfs itself writes them:
// "name/" is a directory, "->t" a symlink to t, "!whiteout" a 0/0 character
// device, "!opaque" a directory with trusted.overlay.opaque=y, "!copy" a
// copy of the same path in the first lower layer with all its metadata
// (what overlayfs leaves after opening a file for writing), anything else a
// file with that content.
func writeLayer(t *testing.T, root, copyFrom string, spec map[string]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(spec)) { // parents first
		v := spec[p]
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		case v == "!whiteout":
			err = unix.Mknod(full, unix.S_IFCHR, 0)
		case v == "!opaque":
			if err = os.Mkdir(full, 0o755); err == nil {
				err = unix.Setxattr(full, xattrOpaque, []byte("y"), 0)
			}
		case v == "!copy":
			err = copyWithMeta(filepath.Join(copyFrom, p), full)
		case strings.HasPrefix(v, "->"):
			err = os.Symlink(v[2:], full)
		default:
			err = os.WriteFile(full, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatalf("layer entry %s: %v", p, err)
		}
	}
}

func copyWithMeta(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(dst, os.FileMode(st.Mode&0o777)); err != nil {
		return err
	}
	return unix.UtimesNano(dst, []unix.Timespec{st.Atim, st.Mtim})
}

// layers creates lower layers (topmost first) and an empty upper with the
// same root attributes, as prepareLayout does.
func layers(t *testing.T, lowers ...map[string]string) (Config, Layout) {
	t.Helper()
	base := t.TempDir()
	var cfg Config
	for i, spec := range lowers {
		dir := filepath.Join(base, "lower"+string(rune('0'+i)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeLayer(t, dir, "", spec)
		if i == 0 {
			cfg.Path = dir
		} else {
			cfg.Compose = append(cfg.Compose, dir)
		}
	}
	l := NewLayout(filepath.Join(base, "state"))
	for _, d := range []string{l.Dir, l.Upper, l.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, l
}

func TestChanges(t *testing.T) {
	requireOverlay(t) // trusted.* xattrs and mknod need root
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		lowers []map[string]string
		upper  map[string]string
		tweak  func(t *testing.T, cfg Config, upper string)
		want   []Change
	}{
		{
			name:   "copy-up without a change is not a change",
			lowers: []map[string]string{{"f": "same\n", "d/g": "g\n"}},
			upper:  map[string]string{"f": "!copy", "d/": "", "d/g": "!copy"},
		},
		{
			name:   "new mtime alone is a change",
			lowers: []map[string]string{{"f": "same\n"}},
			upper:  map[string]string{"f": "!copy"},
			tweak: func(t *testing.T, _ Config, upper string) {
				os.Chtimes(filepath.Join(upper, "f"), past, past)
			},
			want: []Change{{"f", Modified, TypeFile}},
		},
		{
			name:   "same size and mtime but other bytes",
			lowers: []map[string]string{{"f": "aaaa"}},
			upper:  map[string]string{"f": "bbbb"},
			tweak: func(t *testing.T, cfg Config, upper string) {
				fi, _ := os.Stat(filepath.Join(cfg.Path, "f"))
				os.Chtimes(filepath.Join(upper, "f"), fi.ModTime(), fi.ModTime())
			},
			want: []Change{{"f", Modified, TypeFile}},
		},
		{
			name:   "added entries of every type",
			lowers: []map[string]string{{}},
			upper:  map[string]string{"n.txt": "n", "nd/": "", "nd/x": "x", "ln": "->n.txt"},
			tweak: func(t *testing.T, _ Config, upper string) {
				unix.Mkfifo(filepath.Join(upper, "p"), 0o600)
			},
			want: []Change{{"ln", Added, TypeSymlink}, {"n.txt", Added, TypeFile}, {"nd", Added, TypeDir}, {"nd/x", Added, TypeFile}, {"p", Added, TypeFIFO}},
		},
		{
			name:   "whiteouts delete files and whole directories",
			lowers: []map[string]string{{"f": "f", "d/a": "a", "d/sub/b": "b", "keep": "k"}},
			upper:  map[string]string{"f": "!whiteout", "d": "!whiteout"},
			want:   []Change{{"d", Deleted, TypeDir}, {"f", Deleted, TypeFile}},
		},
		{
			name:   "whiteout of a name no lower layer has",
			lowers: []map[string]string{{"f": "f"}},
			upper:  map[string]string{"ghost": "!whiteout"},
		},
		{
			name:   "opaque directory: recreated entries compared, hidden ones deleted, recursively",
			lowers: []map[string]string{{"d/a": "a", "d/b": "b", "d/sub/c": "c", "d/sub/keep": "k"}},
			upper:  map[string]string{"d": "!opaque", "d/a": "a2", "d/sub/": "", "d/sub/keep": "k2"},
			want: []Change{
				{"d", Opaque, TypeDir}, {"d/a", Modified, TypeFile}, {"d/b", Deleted, TypeFile},
				{"d/sub/c", Deleted, TypeFile}, {"d/sub/keep", Modified, TypeFile},
			},
		},
		{
			name:   "file becomes a directory and directory becomes a file",
			lowers: []map[string]string{{"was-file": "f", "was-dir/x": "x"}},
			upper:  map[string]string{"was-file": "!opaque", "was-file/in": "i", "was-dir": "now a file"},
			want:   []Change{{"was-dir", Modified, TypeFile}, {"was-file", Modified, TypeDir}, {"was-file/in", Added, TypeFile}},
		},
		{
			name:   "mode changes of a file, a directory and the workspace root",
			lowers: []map[string]string{{"f": "f", "d/": ""}},
			upper:  map[string]string{"f": "!copy", "d/": ""},
			tweak: func(t *testing.T, _ Config, upper string) {
				os.Chmod(filepath.Join(upper, "f"), 0o600)
				os.Chmod(filepath.Join(upper, "d"), 0o700)
				os.Chmod(upper, 0o750)
			},
			want: []Change{{".", Modified, TypeDir}, {"d", Modified, TypeDir}, {"f", Modified, TypeFile}},
		},
		{
			name:   "symlink retargeted",
			lowers: []map[string]string{{"ln": "->a", "same": "->b"}},
			upper:  map[string]string{"ln": "->c", "same": "->b"},
			want:   []Change{{"ln", Modified, TypeSymlink}},
		},
		{
			name: "compose layers form the original view",
			lowers: []map[string]string{
				{"top": "t", "hidden-below": "!whiteout", "lib/": ""},
				{"c-only": "c", "hidden-below": "h", "lib/util": "u", "top": "shadowed"},
			},
			upper: map[string]string{"c-only": "!whiteout", "hidden-below": "new", "lib/": "", "lib/util": "u2"},
			want: []Change{
				{"c-only", Deleted, TypeFile}, {"hidden-below", Added, TypeFile}, {"lib/util", Modified, TypeFile},
			},
		},
		{
			name: "opaque directory in a compose layer stops the merge",
			lowers: []map[string]string{
				{"d": "!opaque", "d/a": "a"},
				{"d/b": "b"},
			},
			upper: map[string]string{"d": "!opaque"},
			want:  []Change{{"d", Opaque, TypeDir}, {"d/a", Deleted, TypeFile}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, l := layers(t, tc.lowers...)
			writeLayer(t, l.Upper, cfg.Path, tc.upper)
			if tc.tweak != nil {
				tc.tweak(t, cfg, l.Upper)
			}
			got, err := Changes(cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Changes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangesRefusesRedirectAndMetacopy(t *testing.T) {
	requireOverlay(t)
	for _, attr := range []string{xattrRedirect, xattrMetacopy} {
		t.Run(attr, func(t *testing.T) {
			cfg, l := layers(t, map[string]string{"d/x": "x"})
			writeLayer(t, l.Upper, cfg.Path, map[string]string{"d/": ""})
			if err := unix.Setxattr(filepath.Join(l.Upper, "d"), attr, []byte("/elsewhere"), 0); err != nil {
				t.Fatal(err)
			}
			_, err := Changes(cfg, l)
			if err == nil || !strings.Contains(err.Error(), attr) {
				t.Fatalf("Changes error = %v, want one naming %s", err, attr)
			}
			rep, err := Commit(Config{Path: cfg.Path, Commit: CommitApply}, l)
			if err == nil || rep.Upper != l.Upper {
				t.Fatalf("Commit = %+v, %v; want an error that keeps the upper layer", rep, err)
			}
		})
	}
}
