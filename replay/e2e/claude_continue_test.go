//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
	claudefmt "github.com/pvisor/pvisor/trajectory/claude"
)

func loadClaudeSession(t *testing.T) *recordedSession {
	return loadRecordedSession(t, "claude-code", claudefmt.New())
}

// messages returns the canonical messages of a request body (without the
// runtime items the CLI renders afresh at each launch: the reminders in
// front of the first message, role "system" messages) and the raw ones.
func messages(t *testing.T, body []byte) (canon, raw []string) {
	t.Helper()
	for i, m := range gjson.GetBytes(body, "messages").Array() {
		r := m.Raw
		raw = append(raw, r)
		if m.Get("role").Str == "system" {
			continue
		}
		c := m.Get("content").Array()
		n := 0
		for i == 0 && n < len(c)-1 && claudefmt.IsRuntimeReminder(c[n].Get("text").Str) {
			n++
		}
		if n > 0 {
			parts := make([]string, len(c)-n)
			for j, b := range c[n:] {
				parts[j] = b.Raw
			}
			r = `{"role":"user","content":[` + strings.Join(parts, ",") + `]}`
		}
		cm, err := claudefmt.Canonical([]byte(r))
		if err != nil {
			t.Fatal(err)
		}
		canon = append(canon, string(cm))
	}
	return canon, raw
}

// TestContinueClaudeEveryStep continues the recorded Claude Code session
// after every step with the real CLI, driven by the recorded upstream: the
// first request that reaches the upstream is exactly the rebuilt session's
// projection (and, paths aside, byte for byte the messages the CLI sent at
// that point when it recorded the session, cache breakpoint included), the
// agent finishes the task, the continued session holds no envelope record,
// and its first action equals the recorded one.
func TestContinueClaudeEveryStep(t *testing.T) {
	eachRelease(t, "claude-code", claudefmt.New(), func(t *testing.T, s *recordedSession) {
		s.continueEveryStep(t, func(t *testing.T, cr *continueRun, prefixTurns int) { checkClaudeContinuation(t, s, cr, prefixTurns) })
	})
}

// checkClaudeContinuation holds one continuation to the recording (see
// TestContinueClaudeEveryStep).
func checkClaudeContinuation(t *testing.T, s *recordedSession, cr *continueRun, prefixTurns int) {
	{
		fwd := cr.capture.forwarded()
		if len(fwd) == 0 {
			t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
		}
		proj, err := claudefmt.Project(bytes.NewReader(cr.staged(t, "pvisor-staged-session.jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		first, firstRaw := messages(t, fwd[0])
		if d := cmp.Diff(rawStrings(proj.Messages), first); d != "" {
			t.Errorf("first forwarded request differs from the rebuilt session's projection (-projection +forwarded):\n%s", d)
		}

		// Independently: byte for byte the messages the real CLI sent at
		// this point while recording, but for the workspace path (the
		// context reminder's date may differ). Another release renders its
		// runtime items its own way: the projection check above holds it.
		_, orig := messages(t, s.requests[prefixTurns].Body)
		// Resumed on a later day than it was recorded, 2.1.3xx tells the
		// model so after the nonce (the envelope keeps it as a runtime
		// item); the recording, made the same day, has no such notice.
		dated := len(withoutDateChange(firstRaw)) != len(firstRaw)
		firstRaw = withoutDateChange(firstRaw)
		if !s.sameRelease() {
			orig = nil
		} else if len(orig) != len(firstRaw) {
			t.Fatalf("forwarded %d messages, the recording's request had %d", len(firstRaw), len(orig))
		}
		move := relocate.Paths{From: s.manifest.RepoPath, To: cr.ws}
		// The staged session's OS version is this machine's (the
		// recording's machine may have run another kernel).
		staging, _ := cr.res.Metadata["continuation"].(map[string]any)["staging"].(map[string]any)
		osFrom, osTo, _ := strings.Cut(fmt.Sprint(staging["relocated_os_version"]), " -> ")
		for i := 1; i < len(orig); i++ {
			want, _, err := move.JSON([]byte(orig[i]))
			if err != nil {
				t.Fatal(err)
			}
			if osTo != "" {
				want = []byte(strings.ReplaceAll(string(want), "OS Version: "+osFrom, "OS Version: "+osTo))
			}
			// A regenerated observation may differ from the recorded one
			// (the projection check above holds it to the rebuilt
			// session); every other byte must not.
			w, got := withObservations(t, string(want), firstRaw[i]), firstRaw[i]
			if dated {
				// The date notice is the last message now: Claude's cache
				// breakpoint moved to it from the boundary.
				w, got = withoutCacheControl(w), withoutCacheControl(got)
			}
			if w != got {
				t.Errorf("message %d differs from the recorded request:\nrecorded  %s\nforwarded %s", i, w, firstRaw[i])
			}
		}
		for i, body := range fwd {
			for _, leak := range []string{"__PVISOR_NATIVE_REPLAY_", "__PVISOR_RESUME_MARKER_", "No response requested."} {
				if bytes.Contains(body, []byte(leak)) {
					t.Errorf("forwarded request %d holds %q", i+1, leak)
				}
			}
		}

		cont := cr.file(t, "native/continued-session.jsonl")
		for _, leak := range []string{"__PVISOR_NATIVE_REPLAY_", "__PVISOR_RESUME_MARKER_", "No response requested."} {
			if bytes.Contains(cont, []byte(leak)) {
				t.Errorf("native/continued-session.jsonl holds %q", leak)
			}
		}
		ct, err := claudefmt.New().Decode(bytes.NewReader(cont), trajectory.Options{})
		if err != nil {
			t.Fatalf("the continued session does not decode: %v", err)
		}
		if len(ct.Actions) != len(s.traj.Actions) {
			t.Errorf("the continued session has %d responses on its chain, the recording %d", len(ct.Actions), len(s.traj.Actions))
		}
		rep, _ := cr.res.Metadata["continuation"].(map[string]any)["envelope"].(envelope.Report)
		n := 0
		for _, c := range rep.Variants {
			n += c
		}
		if n != rep.Accepted || n == 0 {
			t.Errorf("envelope variants %v do not account for the %d accepted requests", rep.Variants, rep.Accepted)
		}
		t.Logf("claude %s continuing a %s recording: envelope %v", s.release, s.version, rep.Variants)
	}
}

// TestContinueClaudeRefusesTamperedSession changes a boundary observation in
// the staged session behind pvisor's back (an entrypoint wrapper edits it
// before exec'ing claude): the bridge refuses the first request, nothing
// reaches the upstream, and the run fails with continuation_error (exit 40).
func TestContinueClaudeRefusesTamperedSession(t *testing.T) {
	s := loadClaudeSession(t)
	enterLoopbackNetns(t)
	wrapper := s.tamperingEntrypoint(t, "claude",
		`for f in $(find "$CLAUDE_CONFIG_DIR/projects" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`)
	cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
	cr.checkRefused(t, "differs from message")
	cr.checkRefusedFinally(t)
}

// withObservations returns the recorded message with the content of each
// tool_result replaced by the bytes the forwarded message has for the same
// tool_use id, logging which observations were regenerated differently.
func withObservations(t *testing.T, recorded, forwarded string) string {
	t.Helper()
	fresh := map[string]string{}
	for _, b := range gjson.Get(forwarded, "content").Array() {
		if b.Get("type").Str == "tool_result" {
			fresh[b.Get("tool_use_id").Str] = b.Get("content").Raw
		}
	}
	out := recorded
	for _, b := range gjson.Get(recorded, "content").Array() {
		id := b.Get("tool_use_id").Str
		f, ok := fresh[id]
		if b.Get("type").Str != "tool_result" || !ok || f == b.Get("content").Raw {
			continue
		}
		t.Logf("observation of %s was regenerated differently: recorded %s, replayed %s", id, b.Get("content").Raw, f)
		nb := strings.Replace(b.Raw, `"content":`+b.Get("content").Raw, `"content":`+f, 1)
		out = strings.Replace(out, b.Raw, nb, 1)
	}
	return out
}

// withoutDateChange drops Claude Code's "The date has changed." notices.
func withoutDateChange(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		r := gjson.Parse(m)
		text := r.Get("content").Str
		if r.Get("content").IsArray() {
			text = r.Get("content.0.text").Str
		}
		if r.Get("role").Str == "system" && strings.HasPrefix(text, "The date has changed. Today's date is now ") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// withoutCacheControl drops the ephemeral cache breakpoint Claude Code puts
// on the newest message.
func withoutCacheControl(m string) string {
	return strings.ReplaceAll(m, `,"cache_control":{"type":"ephemeral"}`, "")
}
