//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/tested"
	sessions "github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

// resumeAgents are the agents pvisor resume and fork support, with the
// upstream protocol each CLI speaks to the bridge.
var resumeAgents = []struct{ agent, upstream string }{
	{"claude-code", "anthropic"},
	{"codex", "openai-responses"},
	{"pi", "openai-chat"},
}

// fakeOnLoopback serves script on the caller's (namespace's) loopback and
// returns the server and the environment that names it to pvisor as the
// upstream.
func fakeOnLoopback(t *testing.T, script fakemodel.Script) (*fakemodel.Server, []string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(script)
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	return fake, []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=sk-fake", "OPENAI_BASE_URL=" + base + "/v1", "OPENAI_API_KEY=sk-fake"}
}

// pvisorRun runs the pvisor binary with a fresh HOME and returns its
// result line (parsed), exit code and stderr.
func pvisorRun(t *testing.T, pvisor string, env []string, args ...string) (gjson.Result, int, string) {
	t.Helper()
	out, code, stderr := execPvisor(t, pvisor, env, args...)
	if !json.Valid(bytes.TrimSpace(out)) {
		t.Fatalf("pvisor %s printed no JSON line: %q\n%s", args[0], out, stderr)
	}
	return gjson.ParseBytes(out), code, stderr
}

// TestResumeForkRealCLIs: each sandbox is a fresh HOME and cwd. The
// recorded session is captured from the first, resumed in another cwd (the
// first model request after the resume holds the whole prior
// conversation), forked (a new id, the parent bundle byte-identical), and
// forked with structured output whose first answer is malformed (one retry
// resumes the child and fixes it).
func TestResumeForkRealCLIs(t *testing.T) {
	pvisor := pvisorBinary(t)
	for _, ra := range resumeAgents {
		t.Run(ra.agent, func(t *testing.T) {
			rels := tested.Of(ra.agent)
			rel := rels[len(rels)-1]
			bin := releaseBin(t, rel)
			dirs := recordingDirs(t, ra.agent)
			dir := dirs[len(dirs)-1]
			m, err := readManifest(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			store, _ := sessions.Sessions(ra.agent)
			enterLoopbackNetns(t)

			home, loc := sessiontest.Recorded(t, store, dir)
			bundle, _, parentHash := captureSession(t, pvisor, ra.agent, m.SessionID, home)
			base := bundleArgs(t, ra.agent, bundle, ra.upstream, bin)
			script := func(replies ...fakemodel.Reply) fakemodel.Script { return afterResume(m, replies...) }

			t.Run("resume", func(t *testing.T) {
				fake, env := fakeOnLoopback(t, script(fakemodel.Reply{Text: "README.md and NOTES.md. <promise>COMPLETE</promise>"}))
				ws := t.TempDir()
				res := resumeSameSession(t, pvisor, env, fake, m, base, ws)
				if res.Get("metadata.continuation.completion.matched").Str != "<promise>COMPLETE</promise>" {
					t.Errorf("completion = %s", res.Get("metadata.continuation.completion").Raw)
				}
				checkCaptured(t, res, m.SessionID, "README.md and NOTES.md.")
			})

			// pvisor's own fake model (--upstream fake) continues the session
			// from its script's start with ids of its own: the continued
			// session decodes and counts the agent's step.
			t.Run("resume-fake-upstream", func(t *testing.T) {
				sf := filepath.Join(t.TempDir(), "script.json")
				data, _ := json.Marshal(fakemodel.Script{Replies: []fakemodel.Reply{{Text: "Listed. <promise>COMPLETE</promise>"}}})
				if err := os.WriteFile(sf, data, 0o600); err != nil {
					t.Fatal(err)
				}
				args := []string{"resume", "--agent", ra.agent, "--bundle", bundle, "--upstream", "fake", "--fake-script", sf,
					"--agent-entrypoint", bin, "--workspace", t.TempDir(), "--prompt", nextPrompt, "--run-id", "u", "--idle-timeout", "2m",
					"--state-dir", filepath.Join(t.TempDir(), "state"), "--output-dir", filepath.Join(t.TempDir(), "out")}
				res, code, stderr := pvisorRun(t, pvisor, nil, args...)
				if code != 0 {
					t.Fatalf("resume --upstream fake: %d %s\n%s", code, res.Raw, stderr)
				}
				if res.Get("continued_steps").Int() < 1 || res.Get("metadata.session.continued_session_decode_error").Exists() {
					t.Errorf("continued_steps %d, decode error %s", res.Get("continued_steps").Int(), res.Get("metadata.session.continued_session_decode_error").Raw)
				}
				if fm := res.Get("metadata.continuation.upstream.fake_model"); fm.Get("served").Int() != 1 {
					t.Errorf("fake_model %s, want its one reply served", fm.Raw)
				}
				checkCaptured(t, res, m.SessionID, "Listed.")
			})

			t.Run("fork", func(t *testing.T) {
				_, env := fakeOnLoopback(t, script(fakemodel.Reply{Text: "Forked. <promise>COMPLETE</promise>"}))
				forkBundle(t, pvisor, env, m, base)
			})

			t.Run("structured-retry", func(t *testing.T) {
				_, env := fakeOnLoopback(t, script(
					fakemodel.Reply{Text: `Here it is: <result>{"files": ["README.md"`},
					fakemodel.Reply{Text: `<result>{"files": ["README.md", "NOTES.md"]}</result> <promise>COMPLETE</promise>`}))
				schema := filepath.Join(t.TempDir(), "schema.json")
				if err := os.WriteFile(schema, []byte(`{"type":"object","required":["files"],"properties":{"files":{"type":"array","items":{"type":"string"}}}}`), 0o600); err != nil {
					t.Fatal(err)
				}
				res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"fork", "--workspace", t.TempDir(), "--prompt", nextPrompt, "--run-id", "s",
					"--output-tag", "result", "--output-schema", schema, "--max-retries", "1"}, base...)...)
				if code != 0 {
					t.Fatalf("fork: %d %s\n%s", code, res.Raw, stderr)
				}
				so := res.Get("metadata.structured_output")
				if so.Get("attempts").Int() != 2 || so.Get("content.files.1").Str != "NOTES.md" || !strings.Contains(so.Get("problems.0").Str, "unclosed") {
					t.Errorf("structured_output = %s", so.Raw)
				}
			})

			t.Run("fork-after-step", func(t *testing.T) {
				fake, env := fakeOnLoopback(t, fakemodel.Script{Final: "Branched. <promise>COMPLETE</promise>"})
				ws := t.TempDir()
				if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, m.Files["initial_repo"]), "-C", ws).CombinedOutput(); err != nil {
					t.Fatalf("unpack the initial repo: %v\n%s", err, out)
				}
				traj := filepath.Join(dir, m.Files["session"])
				args := []string{"fork", "--agent", ra.agent, "--trajectory", traj, "--after-step", "2", "--workspace", ws, "--prompt", nextPrompt,
					"--run-id", "a", "--upstream", ra.upstream, "--agent-entrypoint", bin, "--idle-timeout", "2m",
					"--state-dir", filepath.Join(t.TempDir(), "state"), "--output-dir", filepath.Join(t.TempDir(), "out")}
				res, code, stderr := pvisorRun(t, pvisor, env, args...)
				if code != 0 {
					t.Fatalf("fork --after-step: %d %s\n%s", code, res.Raw, stderr)
				}
				child := res.Get("metadata.session.session_id").Str
				if child == "" || child == m.SessionID || res.Get("metadata.session.parent_id").Str != m.SessionID {
					t.Errorf("child %q, parent %q", child, res.Get("metadata.session.parent_id").Str)
				}
				if res.Get("after_step").Int() != 2 || !res.Get("metadata.session.parent.unchanged").Bool() {
					t.Errorf("after_step %d, parent %s", res.Get("after_step").Int(), res.Get("metadata.session.parent").Raw)
				}
				first := firstMain(t, fake)
				want := int(res.Get("prefix_model_turns").Int())
				if ra.agent == "claude-code" && bytes.Contains(first.Body, []byte("No response requested.")) {
					want++ // Claude Code closes the interrupted turn with a synthetic answer
				}
				if first.Turn != want || want < 2 {
					t.Errorf("the first request after the fork holds %d assistant turns, want the prefix's %d", first.Turn, want)
				}
				if !bytes.Contains(first.Body, []byte(jsonString(nextPrompt))) || !bytes.Contains(first.Body, []byte(jsonString(m.Prompt))) {
					t.Errorf("the first request after the fork lacks the recorded task or the prompt")
				}
				checkCaptured(t, res, child, "Branched.")
			})

			checkBundleUnchanged(t, bundle, parentHash)
			if orig, _ := os.ReadFile(filepath.Join(loc.Root, loc.Main)); !bytes.Equal(orig, mustRead(t, filepath.Join(dir, m.Files["session"]))) {
				t.Errorf("the session in the first sandbox changed")
			}
		})
	}
}

// nextPrompt is what every resume and fork test asks after the recording.
const nextPrompt = "Now list what you changed, in one line."

// captureSession captures session id from home into a fresh store with the
// pvisor binary and returns the bundle, capture's result line and the
// bundle's file hashes (for checkBundleUnchanged).
func captureSession(t *testing.T, pvisor, agent, id, home string) (string, gjson.Result, map[string]string) {
	t.Helper()
	line, code, stderr := pvisorRun(t, pvisor, nil, "capture", "--agent", agent, "--session", id, "--home", home, "--store", t.TempDir())
	if code != 0 {
		t.Fatalf("capture: %d %s\n%s", code, line.Raw, stderr)
	}
	bundle := line.Get("bundle").Str
	sums, err := capture.Hash(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return bundle, line, sums
}

// bundleArgs are the flags every resume and fork of bundle shares.
func bundleArgs(t *testing.T, agent, bundle, upstream, bin string) []string {
	return []string{"--agent", agent, "--bundle", bundle, "--upstream", upstream, "--agent-entrypoint", bin,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--output-dir", filepath.Join(t.TempDir(), "out"), "--idle-timeout", "2m"}
}

// afterResume is the recording's script answering with replies: the fake
// model answers a resumed session from its script's start, so the replies
// are the turns after the resume.
func afterResume(m manifest, replies ...fakemodel.Reply) fakemodel.Script {
	s := m.Script
	s.Replies = replies
	s.Final = "unexpected extra turn"
	return s
}

// resumeSameSession resumes the bundle in ws and checks what every agent's
// resume must do: the same session id continues, and the first request holds
// all the recorded turns, the recorded task and the new prompt.
func resumeSameSession(t *testing.T, pvisor string, env []string, fake *fakemodel.Server, m manifest, base []string, ws string) gjson.Result {
	t.Helper()
	res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"resume", "--workspace", ws, "--prompt", nextPrompt, "--run-id", "r"}, base...)...)
	if code != 0 {
		t.Fatalf("resume: %d %s\n%s", code, res.Raw, stderr)
	}
	if id := res.Get("metadata.session.session_id").Str; id != m.SessionID {
		t.Errorf("resume continued %s, want %s", id, m.SessionID)
	}
	first := firstMain(t, fake)
	if turns := len(m.Script.Replies); first.Turn != turns {
		t.Errorf("the first request after the resume holds %d assistant turns, want the recording's %d", first.Turn, turns)
	}
	for _, want := range []string{m.Prompt, nextPrompt} {
		if !bytes.Contains(first.Body, []byte(jsonString(want))) {
			t.Errorf("the first request after the resume lacks %q", want)
		}
	}
	return res
}

// forkBundle forks the bundle into a fresh workspace (the fake model says
// "Forked.") and checks the child: a new id, the parent unchanged, the
// child's session captured. It returns the result.
func forkBundle(t *testing.T, pvisor string, env []string, m manifest, base []string) gjson.Result {
	t.Helper()
	res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"fork", "--workspace", t.TempDir(), "--prompt", nextPrompt, "--run-id", "f"}, base...)...)
	if code != 0 {
		t.Fatalf("fork: %d %s\n%s", code, res.Raw, stderr)
	}
	child := res.Get("metadata.session.session_id").Str
	if child == "" || child == m.SessionID {
		t.Errorf("fork child id %q (parent %s)", child, m.SessionID)
	}
	if !res.Get("metadata.session.parent.unchanged").Bool() {
		t.Errorf("parent = %s", res.Get("metadata.session.parent").Raw)
	}
	checkCaptured(t, res, child, "Forked.")
	return res
}

// checkBundleUnchanged holds the bundle's files to the hashes taken at
// capture: resume and fork never write into a bundle.
func checkBundleUnchanged(t *testing.T, bundle string, before map[string]string) {
	t.Helper()
	after, err := capture.Hash(bundle)
	if err != nil || len(after) != len(before) {
		t.Fatalf("parent bundle after the runs: %d files (had %d), %v", len(after), len(before), err)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("parent bundle file %s changed", k)
		}
	}
}

// firstMain is the first request that took a reply from the script.
func firstMain(t *testing.T, fake *fakemodel.Server) fakemodel.Request {
	t.Helper()
	for _, q := range fake.Requests() {
		if q.Kind == fakemodel.KindMain || q.Kind == fakemodel.KindFinal {
			return q
		}
	}
	t.Fatalf("the fake model got no main request")
	return fakemodel.Request{}
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// checkCaptured: the result's new bundle holds session id with the text
// the model answered after the resume.
func checkCaptured(t *testing.T, res gjson.Result, id, text string) {
	t.Helper()
	dir := res.Get("metadata.session.bundle").Str
	m, err := capture.Load(dir)
	if err != nil {
		t.Fatalf("the captured bundle: %v", err)
	}
	if m.SessionID != id {
		t.Errorf("captured %s, want %s", m.SessionID, id)
	}
	main := mustRead(t, filepath.Join(dir, capture.FilesDir, m.Files[0].Path))
	if !bytes.Contains(main, []byte(text)) {
		t.Errorf("the captured session lacks the answer %q", text)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestResumeForkOpenCode: the recorded OpenCode session imported into a
// fresh HOME's database with the real CLI; pvisor resumes it from there in
// another cwd (the first request after the resume holds the prior
// conversation) and forks the bundle that resume captured.
func TestResumeForkOpenCode(t *testing.T) {
	pvisor := pvisorBinary(t)
	rels := tested.Of("opencode")
	bin := releaseBin(t, rels[len(rels)-1])
	dirs := recordingDirs(t, "opencode")
	dir := dirs[len(dirs)-1]
	m, err := readManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	enterLoopbackNetns(t)

	home, cwd := t.TempDir(), t.TempDir()
	importOpenCode(t, bin, home, cwd, filepath.Join(dir, m.Files["session"]), m.SessionID)
	db := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	dbBefore := mustRead(t, db)
	const next = "Now list what you changed, in one line."
	// Each fake model plays its script from the resumed session's turns on.
	s := m.Script
	s.Replies = []fakemodel.Reply{{Text: "README.md and NOTES.md. <promise>COMPLETE</promise>"}}
	s.Final = "unexpected extra turn"
	fake, env := fakeOnLoopback(t, s)
	base := []string{"--agent", "opencode", "--upstream", "openai-chat", "--agent-entrypoint", bin, "--idle-timeout", "2m",
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--output-dir", filepath.Join(t.TempDir(), "out"), "--prompt", next}

	res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"resume", "--session", m.SessionID, "--home", home,
		"--workspace", t.TempDir(), "--run-id", "r"}, base...)...)
	if code != 0 {
		t.Fatalf("resume: %d %s\n%s", code, res.Raw, stderr)
	}
	if id := res.Get("metadata.session.session_id").Str; id != m.SessionID || !res.Get("metadata.session.parent.unchanged").Bool() {
		t.Errorf("resume continued %s, parent %s", id, res.Get("metadata.session.parent").Raw)
	}
	first := firstMain(t, fake)
	if first.Turn != len(m.Script.Replies) {
		t.Errorf("the first request after the resume holds %d assistant turns, want the recording's %d", first.Turn, len(m.Script.Replies))
	}
	for _, want := range []string{m.Prompt, next} {
		if !bytes.Contains(first.Body, []byte(jsonString(want))) {
			t.Errorf("the first request after the resume lacks %q", want)
		}
	}
	checkCaptured(t, res, m.SessionID, "README.md and NOTES.md.")
	if !bytes.Equal(mustRead(t, db), dbBefore) {
		t.Errorf("the source home's database changed")
	}

	bundle := res.Get("metadata.session.bundle").Str
	parent, err := capture.Hash(bundle)
	if err != nil {
		t.Fatal(err)
	}
	s.Replies = []fakemodel.Reply{{Text: "Forked. <promise>COMPLETE</promise>"}}
	_, env = fakeOnLoopback(t, s)
	res, code, stderr = pvisorRun(t, pvisor, env, append([]string{"fork", "--bundle", bundle, "--workspace", t.TempDir(), "--run-id", "f"}, base...)...)
	if code != 0 {
		t.Fatalf("fork: %d %s\n%s", code, res.Raw, stderr)
	}
	child := res.Get("metadata.session.session_id").Str
	if child == "" || child == m.SessionID || !res.Get("metadata.session.parent.unchanged").Bool() {
		t.Errorf("fork child %q, parent %s", child, res.Get("metadata.session.parent").Raw)
	}
	checkCaptured(t, res, child, "Forked.")
	after, err := capture.Hash(bundle)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range parent {
		if after[k] != v {
			t.Errorf("parent bundle file %s changed", k)
		}
	}
}
