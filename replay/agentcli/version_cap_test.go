package agentcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 24 #6: a CLI that floods its --version output is read up to the
// cap, not whole: exec copies through ReadFrom, which bytes.Buffer's own
// implementation left uncapped.
func TestVersionProbeOutputIsCapped(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nhead -c 4000000 /dev/zero | tr '\\0' a\necho ' 2.1.332 (Claude Code)'\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, printed, err := ProbeVersion(context.Background(), cli, []string{"PATH=" + os.Getenv("PATH")})
	if err == nil || !strings.Contains(err.Error(), "printed no version number") {
		t.Fatalf("probe of a flooding CLI = %q (%d bytes), %v: want no version found in the first %d bytes", printed[:min(len(printed), 40)], len(printed), err, probeMaxOut)
	}

	b := &CappedBuffer{Max: 10}
	cmd := exec.Command("sh", "-c", "head -c 100000 /dev/zero")
	cmd.Stdout = b
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	b.WriteString("more")
	if b.Len() != 10 {
		t.Fatalf("CappedBuffer{Max: 10} holds %d bytes", b.Len())
	}
}
