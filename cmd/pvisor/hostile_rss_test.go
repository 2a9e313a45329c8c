package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestHostileOpenCodeRowPeakRSS is issue 24 #2 through the binary: an
// OpenCode database with one 300 MB part row is refused from the rows'
// sizes, with capture's result line and a peak resident set under 256 MiB (it was a
// 2.17 GB out-of-memory crash). The row is a zeroblob, which SQLite stores
// without building it in memory, so the test itself stays small too.
func TestHostileOpenCodeRowPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 300 MB database row")
	}
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	home := openCodeHome(t, "1.18.33", `UPDATE part SET data = zeroblob(300000000) WHERE id = (SELECT id FROM part WHERE session_id = '`+id+`' LIMIT 1)`)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The CLI's own export would load the rows whole too: it must not run.
	cli := fakeOpenCode(t, `echo "the CLI's export ran" >&2; exit 1`)
	// Through the scripts' rss program, not straight from this process: a
	// child spawned by vfork inherits the spawner's peak RSS at exec, so
	// measured from here it would report the test binary's own peak (over
	// 256 MiB under -race after the package's other tests).
	pvisor := filepath.Join(tmp, "pvisor")
	if err := os.Symlink(self, pvisor); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, pvisor, "capture", "--agent", "opencode", "--home", home, "--session", id, "--agent-entrypoint", cli,
		"--store", filepath.Join(tmp, "store"), "--state-dir", filepath.Join(tmp, "state"))
	cmd.Args[0] = "rss"
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 10 {
		t.Fatalf("exit %d, want 10 (trajectory_error):\n%s\n%s", code, out, stderr.String())
	}
	line := strings.TrimSpace(string(out))
	if gjson.Get(line, "failure.category").Str != "trajectory_error" || strings.Contains(stderr.String(), "export ran") {
		t.Fatalf("capture line %s, stderr %s", line, stderr.String())
	}
	if msg := gjson.Get(line, "failure.message").Str; !strings.Contains(msg, "300000000 bytes") || !strings.Contains(msg, "over the 67108864-byte limit") {
		t.Errorf("failure %q does not name the row and the limit", msg)
	}
	m := peakLine.FindAllStringSubmatch(stderr.String(), -1)
	if m == nil {
		t.Fatalf("no 'rss: peak' line from the rss program:\n%s", stderr.String())
	}
	kib, _ := strconv.Atoi(m[len(m)-1][1])
	t.Logf("peak RSS %d MiB", kib>>10)
	if kib > 256<<10 {
		t.Errorf("peak RSS %d MiB, over 256 MiB", kib>>10)
	}
}
