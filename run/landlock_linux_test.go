package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shell tool under WriteRoots writes its workspace and /dev/null and is
// denied everywhere else, symlinks out of the workspace included.
func TestLandlockWriteRoots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tool isolation needs root")
	}
	if _, err := LandlockABI(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(Options{Env: []string{"PATH=/usr/bin:/bin"}, Isolation: Isolation{Enabled: true, WriteRoots: WriteRootsFor(ws)}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sess, err := r.NewSession(ws)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cmd string
		ok        bool
		created   string
	}{
		{"workspace", "echo hi > in.txt && mkdir d && mv in.txt d/", true, filepath.Join(ws, "d", "in.txt")},
		{"dev null", "echo hi > /dev/null", true, ""},
		{"outside", "echo hi > " + filepath.Join(outside, "x"), false, filepath.Join(outside, "x")},
		{"symlink out", "echo hi > out/y", false, filepath.Join(outside, "y")},
		{"mkdir outside", "mkdir " + filepath.Join(outside, "d"), false, filepath.Join(outside, "d")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sess.Shell(context.Background(), ShellRequest{Command: tt.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if (res.ExitCode == 0) != tt.ok {
				t.Fatalf("exit %d, want ok=%v; stderr %q", res.ExitCode, tt.ok, res.Stderr.String())
			}
			if !tt.ok && !strings.Contains(res.Stderr.String(), "Permission denied") {
				t.Errorf("stderr %q does not say the write was denied", res.Stderr.String())
			}
			if tt.created != "" {
				if _, err := os.Lstat(tt.created); (err == nil) != tt.ok {
					t.Errorf("%s exists=%v, want %v", tt.created, err == nil, tt.ok)
				}
			}
		})
	}
}
