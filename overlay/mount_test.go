//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMountRefusesTheHostNamespace(t *testing.T) {
	requireOverlay(t)
	cfg, l := layers(t, map[string]string{"a": "a"})
	if err := Mount(cfg, l); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Mount on the host = %v, want a refusal", err)
	}
	if err := Unmount(cfg.Path); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Unmount on the host = %v, want a refusal", err)
	}
	if m := hostMountsAt(t, cfg.Path); len(m) != 0 {
		t.Errorf("host sees %+v", m)
	}
}

// TestMountBothAPIs mounts with fsopen(2) and with the mount(2) fallback,
// over paths that overlayfs's option syntax cannot express directly.
func TestMountBothAPIs(t *testing.T) {
	requireOverlay(t)
	defer func() { useLegacyMount = false }()
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			useLegacyMount = legacy
			base := filepath.Join(t.TempDir(), `odd, dir: with\ chars`)
			ws := filepath.Join(base, "ws")
			writeTree(t, ws, map[string]string{"a": "a", "d/x": "x"})
			cfg, l := Config{Path: ws}, NewLayout(filepath.Join(base, "state"))
			must(t, prepareLayout(cfg, l))
			inPrivateNS(t, func() error {
				if err := Mount(cfg, l); err != nil {
					return err
				}
				mounts, err := readMountinfo()
				if err != nil {
					return err
				}
				at := mountsAt(mounts, ws)
				if len(at) != 1 || at[0].FSType != "overlay" || at[0].Source != "pvisor" {
					t.Errorf("mounts at %s: %+v", ws, at)
				}
				// redirect_dir is off: a lower directory cannot be renamed
				// in place (tools fall back to copying).
				err = os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "renamed"))
				if !errors.Is(err, unix.EXDEV) {
					t.Errorf("renaming a lower directory = %v, want EXDEV", err)
				}
				if err := os.WriteFile(filepath.Join(ws, "b"), []byte("b"), 0o644); err != nil {
					return err
				}
				if err := Unmount(ws); err != nil {
					return err
				}
				if err := Unmount(ws); err == nil || !strings.Contains(err.Error(), "no overlay") {
					t.Errorf("second Unmount = %v, want 'no overlay'", err)
				}
				return nil
			})
			if _, err := os.Stat(filepath.Join(l.Upper, "b")); err != nil {
				t.Errorf("write did not land in the upper layer: %v", err)
			}
			if _, err := os.Stat(filepath.Join(ws, "b")); err == nil {
				t.Error("write reached the workspace")
			}
		})
	}
}

func TestMountKeepsRestrictiveFlags(t *testing.T) {
	requireOverlay(t)
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	cfg, l := Config{Path: ws}, NewLayout(filepath.Join(base, "state"))
	must(t, prepareLayout(cfg, l))
	inPrivateNS(t, func() error {
		if err := unix.Mount("tmpfs", ws, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=1m"); err != nil {
			return err
		}
		if err := Mount(cfg, l); err != nil {
			return err
		}
		var st unix.Statfs_t
		if err := unix.Statfs(ws, &st); err != nil {
			return err
		}
		if st.Type != unix.OVERLAYFS_SUPER_MAGIC {
			t.Errorf("top mount at %s is not the overlay (type %#x)", ws, st.Type)
		}
		if want := int64(unix.ST_NOSUID | unix.ST_NOEXEC); st.Flags&want != want {
			t.Errorf("overlay flags %#x lack nosuid|noexec of the workspace mount", st.Flags)
		}
		return Unmount(ws)
	})
}

func TestMountErrorCarriesKernelReason(t *testing.T) {
	requireOverlay(t)
	base := t.TempDir()
	writeTree(t, base, map[string]string{"ws/a": "a", "ov/lower/": "", "ov/upper/": "", "ov/work/": "", "ov/merged/": ""})
	ov := filepath.Join(base, "ov")
	inPrivateNS(t, func() error {
		opts := "lowerdir=" + ov + "/lower,upperdir=" + ov + "/upper,workdir=" + ov + "/work"
		if err := unix.Mount("overlay", ov+"/merged", "overlay", 0, opts); err != nil {
			return err
		}
		l := NewLayout(filepath.Join(ov, "merged", "state"))
		if err := prepareLayout(Config{Path: filepath.Join(base, "ws")}, l); err != nil {
			return err
		}
		err := Mount(Config{Path: filepath.Join(base, "ws")}, l)
		if err == nil || !strings.Contains(err.Error(), "not supported as upperdir") || !strings.Contains(err.Error(), "--state-dir") {
			t.Errorf("Mount with the upper on overlayfs = %v; want the kernel's reason and what to do", err)
		}
		return nil
	})
}
