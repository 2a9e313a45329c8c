package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/fakeagent"
)

// TestUpstreamTimeoutEndsReplay: the continued agent's model service
// stalls, before its headers or in the middle of its answer. The replay
// must end within seconds of the (small) timeout with exit 40 and a v3
// result whose failure names the timeout and the flag that raises it,
// through the real pvisor binary, bridge and a stand-in Codex CLI.
func TestUpstreamTimeoutEndsReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("continues a replay with a stand-in Codex")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(root, "testdata/e2e/sessions/codex@0.171.0")
	rollouts, _ := filepath.Glob(filepath.Join(session, "rollout-*.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	dir := t.TempDir()
	cli := filepath.Join(dir, "bin", "codex")
	if err := fakeagent.BuildCodex(root, cli); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, flag, want string
		serve            func(w http.ResponseWriter, stop <-chan struct{})
	}{
		{"stall before headers", "--upstream-first-byte-timeout", "no response headers within 1s",
			func(w http.ResponseWriter, stop <-chan struct{}) { <-stop }},
		{"stall mid-answer", "--upstream-idle-timeout", "no bytes for 1s",
			func(w http.ResponseWriter, stop <-chan struct{}) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"id":"resp_1","output":[`))
				w.(http.Flusher).Flush()
				<-stop
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.serve(w, stop) }))
			defer srv.Close()
			defer close(stop)
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("tar", "-xzf", filepath.Join(session, "repo.tar.gz"), "-C", ws).CombinedOutput(); err != nil {
				t.Fatalf("tar: %v %s", err, out)
			}
			st := t.TempDir()
			cmd := exec.Command(self, "replay", "--agent", "codex", "--agent-entrypoint", cli, "--trajectory", rollouts[0],
				"--after-step", "1", "--workspace", ws, "--state-dir", filepath.Join(st, "state"), "--output-dir", filepath.Join(st, "out"),
				"--upstream", "openai-responses", tc.flag, "1s", "--quiet")
			cmd.Args[0] = "pvisor"
			cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=not-a-real-key")
			start := time.Now()
			out, _ := cmd.Output()
			took := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != 40 {
				t.Fatalf("exit %d, want 40:\n%s", code, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			line := lines[len(lines)-1]
			if s := gjson.Get(line, "schema_version").Str; s != "sandbox-playback.result/v3" {
				t.Fatalf("last line is not a v3 result: %s", line)
			}
			msg := gjson.Get(line, "failure.message").Str
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.flag) {
				t.Errorf("failure message %q does not say %q and name %s", msg, tc.want, tc.flag)
			}
			t.Logf("%s: %s", took, msg)
			if took > 30*time.Second {
				t.Errorf("took %s with a 1s timeout", took)
			}
		})
	}
}
