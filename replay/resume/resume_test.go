package resume

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/internal/clitest"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/opencode/store/storetest"
	"github.com/pvisor/pvisor/trajectory/session"
)

// The resume tests run a stand-in for `codex exec resume|fork <id> -`: this
// test binary, re-executed. It does what the real CLI does: finds the rollout
// by id in CODEX_HOME (a fork copies it under a new id), reads the prompt on
// stdin, sends the rollout's items and the prompt to the provider in
// config.toml, appends the prompt and the answer to the rollout, and prints
// thread.started and the answer as --json events. FAKE_RESUME_HANG=1 keeps it
// running after it answered.
const fakeResumeEnv = "PVISOR_TEST_FAKE_RESUME"

func init() {
	if os.Getenv(fakeResumeEnv) == "1" {
		os.Exit(fakeResumeMain(os.Args[1:]))
	}
}

func fakeResumeEntrypoint(t *testing.T, env ...string) string {
	t.Helper()
	path, err := clitest.SelfAsCLI(t.TempDir(), "codex", fakeResumeEnv, env...)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func fakeResumeMain(args []string) int {
	if len(args) > 0 && args[0] == "--version" {
		fmt.Println("codex-cli " + tested.RangeOf("codex").Max)
		return 0
	}
	if err := fakeResume(args); err != nil {
		fmt.Fprintln(os.Stderr, "fake codex:", err)
		return 1
	}
	if os.Getenv("FAKE_RESUME_HANG") == "1" {
		time.Sleep(time.Hour)
	}
	return 0
}

func fakeResume(args []string) error {
	if len(args) < 4 || args[0] != "exec" || args[len(args)-1] != "-" {
		return fmt.Errorf("want exec resume|fork … ID -, got %q", args)
	}
	sub, sid := args[1], args[len(args)-2]
	home := os.Getenv("CODEX_HOME")
	cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		return err
	}
	m := clitest.BaseURL.FindSubmatch(cfg)
	if m == nil {
		return fmt.Errorf("no base_url in config.toml")
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+sid+".jsonl"))
	if len(files) != 1 {
		return fmt.Errorf("session %s not found: %v", sid, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	if got := gjson.GetBytes(data, "payload.cwd").Str; got != cwd {
		return fmt.Errorf("the session records cwd %s, not the one it resumes in (%s)", got, cwd)
	}
	path := files[0]
	if sub == "fork" {
		child := "01a29999-0000-7000-8000-00000000f0c1"
		path = filepath.Join(filepath.Dir(path), "rollout-2026-11-29T10-00-00-"+child+".jsonl")
		data = bytes.ReplaceAll(data, []byte(sid), []byte(child))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
		sid = child
	}
	proj, err := codex.Project(bytes.NewReader(data))
	if err != nil {
		return err
	}
	text, _ := io.ReadAll(os.Stdin)
	user, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": []any{map[string]string{"type": "input_text", "text": string(text)}}})
	input := []string{}
	for _, it := range proj.Items {
		input = append(input, string(it))
	}
	input = append(input, string(user))
	fmt.Printf(`{"type":"thread.started","thread_id":%q}`+"\n", sid)
	out, err := clitest.PostResponses(string(m[1]), input)
	if err != nil {
		return err
	}
	rollout, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer rollout.Close()
	fmt.Fprintf(rollout, `{"timestamp":"2026-11-29T12:00:00.000Z","type":"response_item","payload":%s}`+"\n", user)
	for _, it := range gjson.GetBytes(out, "output").Array() {
		fmt.Fprintf(rollout, `{"timestamp":"2026-11-29T12:00:00.000Z","type":"response_item","payload":%s}`+"\n", it.Raw)
		if t := it.Get("content.0.text").Str; it.Get("type").Str == "message" && t != "" {
			ev, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]string{"type": "agent_message", "text": t}})
			fmt.Println(string(ev))
		}
	}
	return nil
}

// resumeFixture is a Codex session in a sandbox's home and a workspace to
// resume it in.
type resumeFixture struct {
	dir, home, ws, script string
	req                   *SessionRequest
}

const fixtureSID = "01a20000-0000-7000-8000-000000000001"

func newResumeFixture(t *testing.T, mode string, replies string, env ...string) *resumeFixture {
	t.Helper()
	dir := t.TempDir()
	f := &resumeFixture{dir: dir, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws"), script: filepath.Join(dir, "script.json")}
	day := filepath.Join(f.home, ".codex", "sessions", "2026", "11", "29")
	for _, d := range []string{day, f.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clitest.SynthRollout(t, filepath.Join("..", "..", "trajectory", "codex", "testdata", "stage"), day)
	if err := os.WriteFile(f.script, []byte(replies), 0o600); err != nil {
		t.Fatal(err)
	}
	f.req = &SessionRequest{Mode: mode, Agent: "codex", SessionID: fixtureSID, SourceHome: f.home, Workspace: f.ws,
		Prompt: prompt.Source{Text: "Now add tests."}, Upstream: replay.UpstreamFake, FakeScript: f.script,
		AgentEntrypoint: fakeResumeEntrypoint(t, env...), IdleTimeout: 20 * time.Second, RunID: "s",
		StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out")}
	return f
}

func (f *resumeFixture) run(t *testing.T) *result.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return RunSession(ctx, f.req)
}

// sessionMeta is metadata.session of res, through JSON as a reader sees it.
func sessionMeta(t *testing.T, res *result.Result) gjson.Result {
	t.Helper()
	return gjson.GetBytes(res.Line(), "metadata")
}

func TestResumeAndFork(t *testing.T) {
	const done = `{"replies":[],"final":"Added. <promise>COMPLETE</promise>"}`
	for _, mode := range []string{ModeResume, ModeFork} {
		t.Run(mode, func(t *testing.T) {
			f := newResumeFixture(t, mode, done)
			src := filepath.Join(f.home, ".codex", "sessions", "2026", "11", "29", "rollout-2026-11-29T10-00-00-"+fixtureSID+".jsonl")
			before, _ := os.ReadFile(src)
			res := f.run(t)
			if res.Failure != nil {
				t.Fatalf("failure: %+v\n%s", res.Failure, res.Line())
			}
			md := sessionMeta(t, res)
			child := md.Get("session.session_id").Str
			switch {
			case mode == ModeResume && child != fixtureSID:
				t.Errorf("resume continued %s, want %s", child, fixtureSID)
			case mode == ModeFork && (child == fixtureSID || child == ""):
				t.Errorf("fork child id %q", child)
			}
			if !md.Get("session.parent.unchanged").Bool() || md.Get("session.parent.sha256_before").Raw != md.Get("session.parent.sha256_after").Raw {
				t.Errorf("parent not reported unchanged: %s", md.Get("session.parent").Raw)
			}
			if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
				t.Errorf("the source session changed")
			}
			if got := md.Get("session.restored.cwd_rewrites").Int(); got == 0 {
				t.Errorf("no cwd rewritten: %s", md.Get("session.restored").Raw)
			}
			if *res.Phase != result.PhaseContinued || res.AgentStatus != result.AgentCompleted || res.Quality != result.QualityVerified {
				t.Errorf("phase %v status %s quality %s", *res.Phase, res.AgentStatus, res.Quality)
			}
			if md.Get("continuation.completion.matched").Str != prompt.DefaultSignal {
				t.Errorf("completion = %s", md.Get("continuation.completion").Raw)
			}
			// The new capture holds the prompt and the answer.
			bundle := md.Get("session.bundle").Str
			m, err := capture.Load(bundle)
			if err != nil || m.SessionID != child {
				t.Fatalf("bundle %s: %+v, %v", bundle, m, err)
			}
			got, _ := os.ReadFile(filepath.Join(bundle, capture.FilesDir, m.Files[0].Path))
			if !bytes.Contains(got, []byte("Now add tests.")) || !bytes.Contains(got, []byte("Added.")) {
				t.Errorf("the captured session lacks the resumed turn")
			}
			if m.OriginCwd != md.Get("session.restored.cwd").Str {
				t.Errorf("captured origin cwd %s, want the workspace", m.OriginCwd)
			}
			// The prompt's text is never stored, only its length and hash.
			line := res.Line()
			if bytes.Contains(line, []byte("Now add tests.")) || md.Get("prompt.length").Int() != int64(len("Now add tests.")) {
				t.Errorf("prompt metadata: %s", md.Get("prompt").Raw)
			}
			stored, _ := os.ReadFile(filepath.Join(f.dir, "out", "s", "result.json"))
			if !bytes.Equal(stored, line) {
				t.Errorf("result.json differs from the printed line")
			}
		})
	}
}

// TestResumeCompletionTimeout: an agent that said it is done and then
// hangs is stopped after the completion timeout, successfully, with a
// warning.
func TestResumeCompletionTimeout(t *testing.T) {
	f := newResumeFixture(t, ModeResume, `{"replies":[],"final":"All done. <promise>COMPLETE</promise>"}`, "FAKE_RESUME_HANG=1")
	f.req.Completion = prompt.Completion{Timeout: 300 * time.Millisecond}
	start := time.Now()
	res := f.run(t)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	md := sessionMeta(t, res)
	if md.Get("continuation.stop_reason").Str != "completed" || md.Get("continuation.completion.warning").Str == "" {
		t.Errorf("continuation = %s", md.Get("continuation").Raw)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("took %s: the completion timeout did not stop the agent", time.Since(start))
	}
	// Without the signal the idle timeout fails the run.
	f = newResumeFixture(t, ModeResume, `{"replies":[],"final":"Still working."}`, "FAKE_RESUME_HANG=1")
	f.req.Completion = prompt.Completion{Timeout: 300 * time.Millisecond}
	f.req.IdleTimeout = 500 * time.Millisecond
	res = f.run(t)
	if res.Failure == nil || res.Failure.Category != result.ContinuationError || !strings.Contains(res.Failure.Message, "no activity") || res.AgentStatus != result.AgentFailed {
		t.Errorf("failure = %+v, agent status %s", res.Failure, res.AgentStatus)
	}
	if res.Phase == nil || *res.Phase != result.PhasePrepared {
		t.Errorf("phase %v, want prepared: the session was restored", res.Phase)
	}
}

// TestResumeStructuredRetry: the first answer's tag is malformed; the
// session is resumed with what was wrong and the second answer is used.
func TestResumeStructuredRetry(t *testing.T) {
	// The fake model plays its script from the resumed session's turns on.
	replies := `{"replies":[
		{"text":"Here: <result>{\"ok\": tru"},
		{"text":"<result>{\"ok\": true}</result> <promise>COMPLETE</promise>"}]}`
	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		retries int
		fails   bool
	}{{1, false}, {0, true}} {
		t.Run(fmt.Sprint("max-retries-", tt.retries), func(t *testing.T) {
			f := newResumeFixture(t, ModeFork, replies)
			f.req.OutputTag, f.req.OutputSchema, f.req.MaxRetries = "result", schema, tt.retries
			res := f.run(t)
			md := sessionMeta(t, res)
			so := md.Get("structured_output")
			if tt.fails {
				if res.Failure == nil || res.Failure.Category != result.ContinuationError || !strings.Contains(res.Failure.Message, "unclosed") {
					t.Errorf("failure = %+v", res.Failure)
				}
				return
			}
			if res.Failure != nil {
				t.Fatalf("failure: %+v\n%s", res.Failure, res.Line())
			}
			if so.Get("content.ok").Type != gjson.True || so.Get("attempts").Int() != 2 || !strings.Contains(so.Get("problems.0").Str, "unclosed") {
				t.Errorf("structured_output = %s", so.Raw)
			}
			if so.Get("retries.0.mode").Str != ModeResume {
				t.Errorf("the retry did not resume the child: %s", so.Get("retries").Raw)
			}
		})
	}
}

// TestResumeBadInput: every refusal prints a result with its category and
// writes nothing.
func TestResumeBadInput(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(t *testing.T, f *resumeFixture)
		category string
		want     string
	}{
		{"unknown id", func(t *testing.T, f *resumeFixture) { f.req.SessionID = "01a2ffff-0000-7000-8000-000000000009" }, result.TrajectoryError, "not found"},
		{"id with path characters", func(t *testing.T, f *resumeFixture) { f.req.SessionID = "../x" }, result.ConfigurationError, "not a plain id"},
		{"two sessions with one id", func(t *testing.T, f *resumeFixture) {
			day := filepath.Join(f.home, ".codex", "sessions", "2026", "11", "30")
			if err := os.MkdirAll(day, 0o700); err != nil {
				t.Fatal(err)
			}
			clitest.SynthRollout(t, filepath.Join("..", "..", "trajectory", "codex", "testdata", "stage"), day)
		}, result.TrajectoryError, "ambiguous"},
		{"not a bundle", func(t *testing.T, f *resumeFixture) { f.req.SessionID, f.req.SourceHome, f.req.Bundle = "", "", f.home }, result.ConfigurationError, "not a capture bundle"},
		{"agent without resume", func(t *testing.T, f *resumeFixture) { f.req.Agent = "openhands" }, result.UnsupportedAgent, "cannot be resumed"},
		{"opencode session not in its database", func(t *testing.T, f *resumeFixture) {
			f.req.Agent, f.req.SessionID = "opencode", "ses_dd667972effeIl1TDXAj2ZWXpJ"
			data := filepath.Join(f.home, ".local", "share", "opencode")
			if err := os.MkdirAll(data, 0o700); err != nil {
				t.Fatal(err)
			}
			// The database the real 1.18.20 filled: another session.
			storetest.DB(t, "1.18.20", filepath.Join(data, "opencode.db"))
		}, result.TrajectoryError, "not found"},
		{"no prompt", func(t *testing.T, f *resumeFixture) { f.req.Prompt = prompt.Source{} }, result.ConfigurationError, "no prompt"},
		{"recorded upstream", func(t *testing.T, f *resumeFixture) { f.req.Upstream = replay.UpstreamRecorded }, result.ConfigurationError, "a resume has none"},
		{"no workspace", func(t *testing.T, f *resumeFixture) { f.req.Workspace = filepath.Join(f.dir, "nope") }, result.WorkspaceError, "not a directory"},
		{"missing placeholder", func(t *testing.T, f *resumeFixture) {
			p := filepath.Join(f.dir, "p.md")
			if err := os.WriteFile(p, []byte("Fix {{ISSUE}}"), 0o600); err != nil {
				t.Fatal(err)
			}
			f.req.Prompt = prompt.Source{File: p}
		}, result.ConfigurationError, "ISSUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newResumeFixture(t, ModeResume, `{"replies":[]}`)
			tt.edit(t, f)
			res := f.run(t)
			if res.Failure == nil || res.Failure.Category != tt.category || !strings.Contains(res.Failure.Message, tt.want) {
				t.Fatalf("failure = %+v, want %s containing %q", res.Failure, tt.category, tt.want)
			}
			if res.StateDir != nil || res.Phase != nil {
				t.Errorf("an early failure has state dir %v", res.StateDir)
			}
			for _, d := range []string{"state", "out"} {
				if _, err := os.Stat(filepath.Join(f.dir, d)); err == nil {
					t.Errorf("%s was written", d)
				}
			}
			if !json.Valid(res.Line()) || gjson.GetBytes(res.Line(), "schema_version").Str != result.SchemaVersion {
				t.Errorf("result line: %s", res.Line())
			}
		})
	}
}

// TestForkAfterStep: the child is the trajectory's prefix replayed in the
// workspace under a new id, resumed with the prompt; the trajectory is
// unchanged.
func TestForkAfterStep(t *testing.T) {
	f := newResumeFixture(t, ModeFork, `{"replies":[],"final":"Branched. <promise>COMPLETE</promise>"}`)
	traj := clitest.SynthRollout(t, filepath.Join("..", "..", "trajectory", "codex", "testdata", "stage"), t.TempDir())
	before, _ := os.ReadFile(traj)
	f.req.SessionID, f.req.SourceHome = "", ""
	f.req.Trajectory, f.req.AfterStep = traj, 1
	res := f.run(t)
	if res.Failure != nil {
		t.Fatalf("failure: %+v\n%s", res.Failure, res.Line())
	}
	md := sessionMeta(t, res)
	child := md.Get("session.session_id").Str
	if child == "" || child == fixtureSID || md.Get("session.parent_id").Str != fixtureSID {
		t.Errorf("child %q, parent %q", child, md.Get("session.parent_id").Str)
	}
	if res.AfterStep != 1 || res.ReplayedToolCalls != 1 || !md.Get("session.parent.unchanged").Bool() {
		t.Errorf("after_step %d, replayed %d, parent %s", res.AfterStep, res.ReplayedToolCalls, md.Get("session.parent").Raw)
	}
	if after, _ := os.ReadFile(traj); !bytes.Equal(before, after) {
		t.Errorf("the trajectory changed")
	}
	m, err := capture.Load(md.Get("session.bundle").Str)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(md.Get("session.bundle").Str, capture.FilesDir, m.Files[0].Path))
	switch {
	case bytes.Contains(got, []byte(fixtureSID)):
		t.Errorf("the child still names the parent's id")
	case !bytes.Contains(got, []byte("step-1")) || bytes.Contains(got, []byte("echo step-2")):
		t.Errorf("the child is not the prefix after step 1")
	case !bytes.Contains(got, []byte("Branched.")):
		t.Errorf("the child lacks the continuation")
	}
	// --prepare-only keeps the recorded observations: no tool runs, and the
	// result says the prefix was not regenerated.
	g := newResumeFixture(t, ModeFork, `{"replies":[],"final":"Branched. <promise>COMPLETE</promise>"}`)
	g.req.SessionID, g.req.SourceHome, g.req.Trajectory, g.req.AfterStep, g.req.PrepareOnly = "", "", traj, 2, true
	res = g.run(t)
	if res.Failure != nil {
		t.Fatalf("--prepare-only: %+v", res.Failure)
	}
	if md := sessionMeta(t, res); res.Quality != result.QualityDegraded || res.ReplayedToolCalls != 0 || md.Get("session.prefix.mode").Str != "prepare-only" {
		t.Errorf("--prepare-only: quality %s, replayed %d, prefix %s", res.Quality, res.ReplayedToolCalls, md.Get("session.prefix").Raw)
	}
	// Bad combinations are refused before anything is written.
	for _, edit := range []func(r *SessionRequest){
		func(r *SessionRequest) { r.Mode = ModeResume },
		func(r *SessionRequest) { r.AfterStep = 0 },
		func(r *SessionRequest) { r.Trajectory = "" },
		func(r *SessionRequest) { r.SessionID = fixtureSID },
		func(r *SessionRequest) { r.Trajectory, r.AfterStep = "", 0 },
	} {
		g := newResumeFixture(t, ModeFork, `{"replies":[]}`)
		g.req.SessionID, g.req.SourceHome, g.req.Trajectory, g.req.AfterStep, g.req.PrepareOnly = "", "", traj, 1, true
		edit(g.req)
		if res := g.run(t); res.Failure == nil || res.Failure.Category != result.ConfigurationError || res.StateDir != nil {
			t.Errorf("failure = %+v", res.Failure)
		}
	}
}

// TestResumeBundleIntoHome: --bundle with --home restores into that home;
// the session already there is moved to the recovery directory, and the
// result says where.
func TestResumeBundleIntoHome(t *testing.T) {
	f := newResumeFixture(t, ModeResume, `{"replies":[],"final":"Done. <promise>COMPLETE</promise>"}`)
	root := filepath.Join(f.home, ".codex")
	bundle, _, err := capture.Capture(capture.Options{Store: codexStore(t), Root: root, ID: fixtureSID, StoreDir: filepath.Join(f.dir, "bundles")})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "sessions", "2026", "11", "29", "rollout-2026-11-29T10-00-00-"+fixtureSID+".jsonl")
	before, _ := os.ReadFile(src)
	// The user's own configuration is back in place after the run.
	userConfig := []byte("model = \"mine\"\n")
	if err := os.WriteFile(filepath.Join(root, "config.toml"), userConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	f.req.SessionID, f.req.SourceHome, f.req.Bundle, f.req.TargetHome = "", "", bundle, f.home
	res := f.run(t)
	if res.Failure != nil {
		t.Fatalf("failure: %+v\n%s", res.Failure, res.Line())
	}
	md := sessionMeta(t, res)
	backup := md.Get("session.restored.backup").Str
	if !strings.HasPrefix(backup, filepath.Join(root, capture.RecoveryDir)) || !strings.Contains(md.Get("warnings").Raw, backup) {
		t.Fatalf("backup %q, warnings %s", backup, md.Get("warnings").Raw)
	}
	kept, err := os.ReadFile(filepath.Join(backup, "sessions", "2026", "11", "29", filepath.Base(src)))
	if err != nil || !bytes.Equal(kept, before) {
		t.Errorf("the session that was in the home is not in the backup: %v", err)
	}
	if now, _ := os.ReadFile(src); !bytes.Contains(now, []byte(f.ws)) {
		t.Errorf("the home does not hold the restored, resumed session")
	}
	if got, _ := os.ReadFile(filepath.Join(root, "config.toml")); !bytes.Equal(got, userConfig) {
		t.Errorf("config.toml after the run = %q, want the user's", got)
	}
}

func codexStore(t *testing.T) session.Store {
	t.Helper()
	s, ok := agents.Sessions("codex")
	if !ok {
		t.Fatal("no codex store")
	}
	return s
}

func TestFileContains(t *testing.T) {
	dir := t.TempDir()
	needle := []byte("ses_dd667972effeIl1TDXAj2ZWXpJ")
	for _, tt := range []struct {
		name string
		at   int // where the needle starts; -1: absent
		size int
	}{
		{"start", 0, 100},
		{"straddles the first read", 1<<20 - 10, 2 << 20},
		{"in the second read", 1<<20 + 5, 2 << 20},
		{"at the very end", 3<<20 - len(needle), 3 << 20},
		{"absent", -1, 3 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Repeat([]byte{'x'}, tt.size)
			if tt.at >= 0 {
				copy(data[tt.at:], needle)
			}
			p := filepath.Join(dir, "db")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := fileContains(p, needle)
			if err != nil || got != (tt.at >= 0) {
				t.Errorf("fileContains = %v, %v", got, err)
			}
		})
	}
}
