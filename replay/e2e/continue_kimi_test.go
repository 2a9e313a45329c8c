//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay"
	kimifmt "github.com/pvisor/pvisor/trajectory/kimi"
)

// TestContinueKimiEveryStep continues the recorded Kimi Code session after
// every step with the real CLI and the recorded upstream: the first
// forwarded request is, after its system message, the staged log's
// projection (compared as JSON values: Kimi orders keys its own way); the
// nonce and the auto-mode reminder never reach the upstream nor stay in
// the continued log, nor does the date-change reminder Kimi adds when
// the session is continued on a later day than it was written.
func TestContinueKimiEveryStep(t *testing.T) {
	eachRelease(t, "kimi", kimifmt.New(), func(t *testing.T, rs *recordedSession) {
		rs.continueEveryStep(t, func(t *testing.T, cr *continueRun, _ int) {
			fwd := mainBodies(cr.capture.forwarded())
			if len(fwd) == 0 {
				t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
			}
			proj, err := kimifmt.Project(cr.staged(t, kimifmt.StagedCopy))
			if err != nil {
				t.Fatal(err)
			}
			first := chatMessages(fwd[0])
			if gjson.Get(first[0], "role").Str != "system" {
				t.Errorf("messages[0] is not the system message: %.200s", first[0])
			}
			if len(first)-1 != len(proj.Items) {
				t.Fatalf("first forwarded request has %d messages after the system one, the projection %d", len(first)-1, len(proj.Items))
			}
			for i, it := range proj.Items {
				var a, b any
				_ = json.Unmarshal(it, &a)
				_ = json.Unmarshal([]byte(first[i+1]), &b)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("message %d: projection %s, forwarded %s", i+1, it, first[i+1])
				}
			}
			for i, b := range cr.capture.forwarded() {
				if bytes.Contains(b, []byte("__PVISOR_NATIVE_REPLAY_")) || bytes.Contains(b, []byte("Auto permission mode is active")) &&
					bytes.Count(b, []byte("Auto permission mode is active")) > 1 {
					t.Errorf("request %d: the nonce or a second auto-mode reminder reached the upstream", i)
				}
			}
			cont := cr.file(t, "native/continued-trajectory.jsonl")
			if bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
				t.Error("the continued session holds the nonce")
			}
			// The recording is from an earlier day, so Kimi adds its
			// date-change reminder to the resumed prompt: envelope, not
			// conversation.
			if bytes.Contains(cont, []byte("The date has changed.")) {
				t.Error("the continued session holds the date-change reminder of the resumed prompt")
			}
		})
	})
}

// TestContinueKimiRefusesTamperedSession changes a boundary observation in
// the staged wire log behind pvisor's back (an entrypoint wrapper edits it
// before exec'ing kimi): the bridge refuses the first request, nothing
// reaches the upstream, and the run fails with exit 40.
func TestContinueKimiRefusesTamperedSession(t *testing.T) {
	s := loadRecordedSession(t, "kimi", kimifmt.New())
	enterLoopbackNetns(t)
	edit := `for f in $(find "$HOME/.kimi-code/sessions" -name wire.jsonl); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`
	wrapper := s.tamperingEntrypoint(t, "kimi", edit)
	cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
	cr.checkRefused(t, "differs from message")
}
