package trajectory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestToolEnvDirs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		env     ToolEnv
		wantErr string
	}{
		{"workspace and new log dir", ToolEnv{Workspace: dir, LogDir: filepath.Join(dir, "logs", "a")}, ""},
		{"no workspace", ToolEnv{}, `pi: workspace "" is not usable`},
		{"missing workspace", ToolEnv{Workspace: filepath.Join(dir, "nope")}, "is not a directory"},
		{"workspace is a file", ToolEnv{Workspace: file}, "is not a directory"},
		{"log dir under a file", ToolEnv{Workspace: dir, LogDir: filepath.Join(file, "logs")}, "pi: log dir:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, err := c.env.Dirs("pi")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || ws != dir {
				t.Fatalf("Dirs = %q, %v; want %q", ws, err, dir)
			}
			if st, err := os.Stat(c.env.LogDir); err != nil || !st.IsDir() {
				t.Fatalf("log dir not created: %v", err)
			}
		})
	}
}
