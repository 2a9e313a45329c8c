package run

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGuardWrite: under an enforcing watch a write resolves through
// symlinks (dangling ones included) before it is let through.
func TestGuardWrite(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	for name, target := range map[string]string{"out": outside, "dangling": filepath.Join(outside, "new"), "in": "sub"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		denied bool
	}{
		{filepath.Join(ws, "a.txt"), false},
		{filepath.Join(ws, "new", "deep", "a.txt"), false},
		{filepath.Join(ws, "in", "a.txt"), false},
		{filepath.Join(ws, "out", "a.txt"), true},
		{filepath.Join(ws, "out", "missing", "a.txt"), true},
		{filepath.Join(ws, "dangling"), true},
		{filepath.Join(ws, "..", "escape.txt"), true},
		{"/etc/x", true},
	}
	w := WatchWrites(ws)
	defer w.Stop()
	for _, tt := range tests {
		if err := GuardWrite("open", tt.path); err != nil {
			t.Errorf("%s: observe must not deny: %v", tt.path, err)
		}
	}
	w.Enforce()
	for _, tt := range tests {
		err := GuardWrite("open", tt.path)
		if tt.denied != (err != nil) {
			t.Errorf("%s: err %v, want denied=%v", tt.path, err, tt.denied)
		}
		if err != nil && !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s: %v is not a permission error", tt.path, err)
		}
	}
	if d := w.Denied(); !slices.Contains(d, "/etc/x") || !slices.Contains(d, filepath.Join(outside, "new")) {
		t.Errorf("denied %v", d)
	}
	// The in-process Write reports it as its own permission error and
	// leaves nothing behind.
	p := filepath.Join(outside, "w.txt")
	if _, err := WriteFile(p, []byte("x")); err == nil {
		t.Error("WriteFile outside the workspace succeeded under enforce")
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("the denied file was created")
	}
}
