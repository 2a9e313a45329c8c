//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	codexfmt "github.com/pvisor/pvisor/trajectory/codex"
)

func loadCodexSession(t *testing.T) *recordedSession {
	return loadRecordedSession(t, "codex", codexfmt.New())
}

// comparableItem is a request input item made comparable across runs: paths
// relocated, and the run-to-run fields of command outputs (chunk id, wall
// time) masked.
func comparableItem(t *testing.T, raw []byte, paths ...relocate.Paths) any {
	t.Helper()
	for _, p := range paths {
		var err error
		if raw, _, err = p.JSON(raw); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if out, ok := m["output"].(string); ok {
		m["output"] = codexfmt.Normalize(out)
	}
	return m
}

func inputItems(body []byte) [][]byte {
	var out [][]byte
	for _, it := range gjson.GetBytes(body, "input").Array() {
		out = append(out, []byte(it.Raw))
	}
	return out
}

// TestContinueCodexEveryStep continues the recorded Codex session after every
// step with the real CLI, driven by the recorded upstream: the first request
// that reaches the upstream is exactly the rebuilt session's projection (and,
// paths and run-to-run fields aside, the request the CLI sent at that point
// when it recorded the session), the agent finishes the task, the continued
// rollout holds no nonce, and its first action equals the recorded one.
func TestContinueCodexEveryStep(t *testing.T) {
	eachRelease(t, "codex", codexfmt.New(), func(t *testing.T, s *recordedSession) {
		s.continueEveryStep(t, func(t *testing.T, cr *continueRun, prefixTurns int) { checkCodexContinuation(t, s, cr, prefixTurns) })
	})
}

// checkCodexContinuation holds one continuation to the recording (see
// TestContinueCodexEveryStep).
func checkCodexContinuation(t *testing.T, s *recordedSession, cr *continueRun, prefixTurns int) {
	{
		// The first forwarded request is the projection of the staged
		// rollout, byte for byte, after the instructions message.
		fwd := cr.capture.forwarded()
		if len(fwd) == 0 {
			t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
		}
		proj, err := codexfmt.Project(bytes.NewReader(cr.staged(t, "pvisor-staged-session.jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		first := inputItems(fwd[0])
		if gjson.GetBytes(first[0], "role").Str != "developer" {
			t.Errorf("input[0] is not the instructions message: %.200s", first[0])
		}
		if d := cmp.Diff(rawStrings(proj.Items), bytesStrings(first[1:])); d != "" {
			t.Errorf("first forwarded request differs from the rebuilt prefix projection (-projection +forwarded):\n%s", d)
		}

		// Independently: it is the request the real CLI sent at this point
		// when it recorded the session, but for paths and run-to-run fields.
		orig := inputItems(s.requests[prefixTurns].Body)
		moves := []relocate.Paths{{From: s.manifest.RepoPath, To: cr.ws},
			{From: filepath.Join(s.manifest.HomePath, ".codex"), To: filepath.Join(cr.state, "cont", "codex-home")}}
		if !s.sameRelease() {
			orig = nil // another release renders its instructions its own way
		} else if len(orig) != len(first) {
			t.Fatalf("forwarded %d items, the recording's request had %d", len(first), len(orig))
		}
		for i := 1; i < len(orig); i++ {
			if d := cmp.Diff(comparableItem(t, orig[i], moves...), comparableItem(t, first[i])); d != "" {
				t.Errorf("item %d differs from the recorded request (-recorded +forwarded):\n%s", i, d)
			}
		}
		if strings.Contains(string(fwd[0]), "__PVISOR_NATIVE_REPLAY_") {
			t.Error("the nonce reached the upstream")
		}

		if cont := cr.file(t, "native/continued-trajectory.jsonl"); bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
			t.Error("native/continued-trajectory.jsonl holds the nonce")
		}
	}
}

func bytesStrings(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// TestContinueCodexRefusesTamperedSession changes a boundary observation in the
// staged rollout behind pvisor's back (an entrypoint wrapper edits it before
// exec'ing codex): the bridge refuses the first request, nothing reaches the
// upstream, and the run fails with continuation_error (exit 40).
func TestContinueCodexRefusesTamperedSession(t *testing.T) {
	s := loadCodexSession(t)
	enterLoopbackNetns(t)
	wrapper := s.tamperingEntrypoint(t, "codex",
		`for f in $(find "$CODEX_HOME/sessions" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`)
	cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
	cr.checkRefused(t, "differs from item")
	cr.checkRefusedFinally(t)
}

// TestContinueCodexPromptAndSecrets continues through a real HTTP upstream (the
// fake model serving the recording's own script) with a boundary prompt, an
// upstream key and a step budget: the prompt reaches the model right after
// O′N in every request, the run stops at the budget, and neither the prompt
// text nor the key is in any file the run left in its state or output dirs.
func TestContinueCodexPromptAndSecrets(t *testing.T) {
	s := loadCodexSession(t)
	const (
		prompt = "Before anything else, PVISOR-E2E-PROMPT-7c1f: re-read the notes."
		key    = "sk-pvisor-e2e-UPSTREAM-KEY-93b2"
		step   = 3
	)
	fake := serveFakeModel(t, key)

	enterLoopbackNetns(t)
	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream, r.BoundaryUserPrompt, r.MaxSteps = "openai-responses", prompt, 5
		fake.Store(fakemodel.New(s.manifest.Script.Expand(map[string]string{"CWD": r.Workspace}), fakemodel.WithReplyOffset(0))) // the recorded next reply answers step N
	})
	res := cr.res
	if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps || res.ContinuedSteps != 2 {
		t.Fatalf("want max_steps after 2 live steps:\n%s", cr.diagnose())
	}
	bp := res.Metadata["boundary_user_prompt"].(map[string]any)
	if bp["injected"] != true || bp["injection_count"].(int) != 2 || bp["position"] != "after_boundary_observation" {
		t.Errorf("boundary_user_prompt metadata %v", bp)
	}
	at := len(inputItems(s.requests[codexfmt.New().PrefixModelTurns(s.traj, step)].Body)) // right after O′N
	reqs := fake.Load().Requests()
	if len(reqs) != 2 {
		t.Errorf("the model got %d requests, want 2 (the third is over the budget)", len(reqs))
	}
	for i, q := range reqs {
		for j, it := range gjson.GetBytes(q.Body, "input").Array() {
			if has := it.Get("content.0.text").Str == prompt; has != (j == at) {
				t.Errorf("request %d item %d: prompt %v, want it exactly at item %d", i, j, has, at)
			}
		}
	}
	for _, dir := range []string{cr.state, cr.out} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
				return nil
			}
			for _, secret := range []string{prompt, key} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("%s holds %q", p, secret)
				}
			}
			return nil
		})
	}
}
