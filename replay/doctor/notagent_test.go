package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorRefusesAnotherAgentsCLI: a CLI from another agent's npm
// package (kimi prints a bare version too) is exit 11, "not pi", before
// anything runs.
func TestDoctorRefusesAnotherAgentsCLI(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@moonshot-ai", "kimi-code")
	if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pkg, "package.json"), `{"name":"@moonshot-ai/kimi-code","version":"2.1.0"}`, 0o644)
	write(filepath.Join(pkg, "dist", "cli.js"), "#!/usr/bin/env node\n", 0o755)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(bin, "kimi")
	if err := os.Symlink("../@moonshot-ai/kimi-code/dist/cli.js", entry); err != nil {
		t.Fatal(err)
	}
	row := check(context.Background(), Options{Entrypoint: entry, WorkDir: t.TempDir(), Path: os.Getenv("PATH"), Self: "/nonexistent"}, "pi", true)
	if row.Status != StatusFailed || row.ExitCode != 11 || !strings.Contains(row.Error, "is not pi: it belongs to the npm package @moonshot-ai/kimi-code 2.1.0") {
		t.Errorf("row %+v", row)
	}
}
