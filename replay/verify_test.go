package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVerifyVerdicts runs verify commands after a replayed prefix: each
// ends with a verdict, a hostile one within its timeout and output cap.
func TestVerifyVerdicts(t *testing.T) {
	withLineFormat(t, lineFormat{})
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	traj := writeLines(t, dir, `{"id":"c1","cmd":"echo done > made.txt","obs":""}`)
	for i, tc := range []struct {
		name, cmd    string
		timeout      time.Duration
		verdict      string
		code         int
		tailHas      string
		timedOut     bool
		maxTailBytes int
	}{
		{name: "pass", cmd: "grep -q done made.txt && echo ok", verdict: VerdictPass, code: 0, tailHas: "ok"},
		{name: "fail", cmd: "echo broken >&2; exit 3", verdict: VerdictFail, code: 3, tailHas: "broken"},
		{name: "timeout", cmd: "sleep 60 & sleep 60", timeout: 300 * time.Millisecond, verdict: VerdictFail, timedOut: true},
		{name: "flood", cmd: "yes pvisor | head -c 5000000; echo END", verdict: VerdictPass, tailHas: "END", maxTailBytes: verifyTail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := Run(context.Background(), &Request{Agent: "lines", Trajectory: traj, AfterStep: 1, Mode: ReplayOnly,
				Workspace: ws, RunID: "v" + string(rune('a'+i)), StateRoot: dir + "/state", OutputRoot: dir + "/out",
				Verify: tc.cmd, VerifyTimeout: tc.timeout})
			if res.Failure != nil {
				t.Fatalf("failure: %+v", res.Failure)
			}
			v, ok := res.Metadata["verify"].(Verification)
			if !ok {
				t.Fatalf("metadata.verify = %#v", res.Metadata["verify"])
			}
			if v.Verdict != tc.verdict || v.TimedOut != tc.timedOut || (!tc.timedOut && (v.ExitCode == nil || *v.ExitCode != tc.code)) {
				t.Errorf("verify = %+v", v)
			}
			if !strings.Contains(v.OutputTail, tc.tailHas) {
				t.Errorf("output tail %q lacks %q", v.OutputTail, tc.tailHas)
			}
			if tc.maxTailBytes > 0 && (len(v.OutputTail) > tc.maxTailBytes || v.OutputBytes < 5000000) {
				t.Errorf("tail %d bytes of %d", len(v.OutputTail), v.OutputBytes)
			}
			if time.Since(start) > 20*time.Second {
				t.Errorf("took %s: the timeout did not bound the command", time.Since(start))
			}
		})
	}
}

func TestVerifyRequestChecks(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Verify: strings.Repeat("x", maxVerifyCommand+1)}, "at most"},
		{Request{Verify: "a\x00b"}, "NUL"},
		{Request{Verify: "true", VerifyTimeout: -time.Second}, "verify_timeout"},
		{Request{VerifyTimeout: time.Second}, "verify is not"},
	} {
		err := tc.req.checkVerify()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.20q: %v, want %q", tc.req.Verify, err, tc.want)
		}
	}
}
