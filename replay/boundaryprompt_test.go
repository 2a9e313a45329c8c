package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
)

// seenUpstream records the bodies the model upstream receives.
type seenUpstream struct {
	bridge.Upstream
	mu     sync.Mutex
	bodies [][]byte
}

func (u *seenUpstream) Send(ctx context.Context, req *bridge.Request) (*http.Response, error) {
	u.mu.Lock()
	u.bodies = append(u.bodies, bytes.Clone(req.Body))
	u.mu.Unlock()
	return u.Upstream.Send(ctx, req)
}

func (f *contFixture) promptFile(t *testing.T, content string, args ...prompt.Arg) {
	t.Helper()
	p := filepath.Join(f.dir, "boundary.md")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f.req.BoundaryUserPromptFile, f.req.PromptArgs = p, args
}

func promptMeta(res *result.Result) map[string]any {
	m, _ := res.Metadata["boundary_user_prompt"].(map[string]any)
	return m
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// A prompt file through the whole continuation: placeholders filled from
// arguments and built-ins, the command run in the workspace after the
// prefix with the tools' environment, the resolved text injected into the model requests, and only
// its digest on disk.
func TestContinueWithPromptFile(t *testing.T) {
	f := newContFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("PVISOR-NOTE-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", f.ws, "init", "-q", "-b", "fix-7").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	f.promptFile(t, "Issue {{ISSUE}} of {{SESSION_ID}} ({{AGENT}}) on {{SOURCE_BRANCH}} in {{WORKSPACE}}.\nNotes: !`cat notes.txt`\nKey: !`echo ${PVISOR_PROMPT_API_KEY:-hidden}`\n",
		prompt.Arg{Key: "ISSUE", Value: "#42"}, prompt.Arg{Key: "UNUSED", Value: "x"})
	// Commands get the replayed tools' environment: no credentials.
	t.Setenv("PVISOR_PROMPT_API_KEY", "sk-prompt-secret")
	up := &seenUpstream{}
	f.req.Hooks = &Hooks{Upstream: func(u bridge.Upstream) bridge.Upstream { up.Upstream = u; return up }}
	var stderr bytes.Buffer
	f.req.ProgressTo = &stderr
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	want := "Issue #42 of 01a20000-0000-7000-8000-000000000001 (codex) on fix-7 in " + f.ws + ".\nNotes: PVISOR-NOTE-7\nKey: hidden\n"
	m := promptMeta(res)
	if m["sha256"] != sha(want) || m["length"] != len(want) || m["requested"] != true || m["injected"] != true ||
		m["source"] != "file" || m["expanded"] != true {
		t.Errorf("boundary prompt metadata %v, want the digest of %q", m, want)
	}
	exps, _ := m["expansions"].([]prompt.Expansion)
	if len(exps) != 2 || exps[0].Command != "cat notes.txt" || exps[0].ExitCode != 0 || exps[0].Line != 2 || exps[1].Line != 3 {
		t.Errorf("expansions %+v", m["expansions"])
	}
	if w, _ := m["warnings"].([]string); len(w) != 1 || !strings.Contains(w[0], "UNUSED") || !strings.Contains(stderr.String(), "warning: --prompt-arg UNUSED") {
		t.Errorf("unused-argument warning: metadata %v, stderr %q", m["warnings"], stderr.String())
	}
	wantJSON, _ := json.Marshal(want)
	if len(up.bodies) == 0 || !bytes.Contains(up.bodies[0], wantJSON[1:len(wantJSON)-1]) {
		t.Errorf("the first model request lacks the resolved prompt")
	}
	noSecret(t, "PVISOR-NOTE-7", filepath.Join(f.dir, "state"), filepath.Join(f.dir, "out"))
}

// A failing command fails the run before the agent starts, as an executor
// error naming the command, its exit code and stderr.
func TestPromptFileCommandFails(t *testing.T) {
	f := newContFixture(t)
	f.promptFile(t, "Look: !`echo broken >&2; exit 7`")
	res := f.run(t)
	if res.Failure == nil || res.Failure.Category != result.ExecutorError || result.ExitCode(res.Failure) != 30 ||
		!strings.Contains(res.Failure.Message, "!`echo broken >&2; exit 7` exited 7: broken") {
		t.Fatalf("result: %s", res.Line())
	}
	if res.AgentStatus != result.AgentNotStarted {
		t.Errorf("agent status %s", res.AgentStatus)
	}
	if slices.Contains(readEvents(t, f.out("replay-events.jsonl")), result.EventContinuationStarted) {
		t.Error("the agent started despite the failed expansion")
	}
	if exps, _ := promptMeta(res)["expansions"].([]prompt.Expansion); len(exps) != 1 || exps[0].ExitCode != 7 {
		t.Errorf("expansions %v", promptMeta(res)["expansions"])
	}
}

// Placeholder errors are flag errors found before anything runs; no
// command runs in a mode that does not start the agent.
func TestPromptFileModes(t *testing.T) {
	t.Run("missing value", func(t *testing.T) {
		f := newContFixture(t)
		f.promptFile(t, "line one\nfix {{TICKET}}\n")
		res := f.run(t)
		if res.Failure == nil || res.Failure.Category != result.ConfigurationError ||
			!strings.Contains(res.Failure.Message, "boundary.md:2: {{TICKET}} has no value") || res.OutputDir != nil && exists(*res.OutputDir) {
			t.Fatalf("result: %s", res.Line())
		}
	})
	t.Run("built-in override", func(t *testing.T) {
		f := newContFixture(t)
		f.promptFile(t, "{{AGENT}}", prompt.Arg{Key: "AGENT", Value: "claude"})
		if res := f.run(t); res.Failure == nil || !strings.Contains(res.Failure.Message, "cannot be overridden") {
			t.Fatalf("result: %s", res.Line())
		}
	})
	for _, mode := range []Mode{PrepareOnly, ReplayOnly} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newContFixture(t)
			f.promptFile(t, "!`touch ran`")
			f.req.Mode = mode
			res := f.run(t)
			if res.Failure != nil {
				t.Fatalf("result: %s", res.Line())
			}
			if _, err := os.Stat(filepath.Join(f.ws, "ran")); err == nil {
				t.Errorf("%s ran the prompt's command", mode)
			}
			if m := promptMeta(res); m["requested"] != true || m["expanded"] != false || m["sha256"] != nil {
				t.Errorf("metadata %v", m)
			}
		})
	}
}

func TestPromptFileFlagChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Request)
		want string
	}{
		{"both", func(r *Request) { r.BoundaryUserPrompt, r.BoundaryUserPromptFile = "x", "p.md" },
			"--boundary-user-prompt and --boundary-user-prompt-file are mutually exclusive"},
		{"args without file", func(r *Request) { r.PromptArgs = []prompt.Arg{{Key: "A", Value: "1"}} },
			"--prompt-arg fills {{KEY}} placeholders of --boundary-user-prompt-file, which is not given"},
		{"args with text", func(r *Request) { r.BoundaryUserPrompt, r.PromptArgs = "x", []prompt.Arg{{Key: "A", Value: "1"}} },
			"used as written"},
	} {
		r := &Request{Agent: "codex", Trajectory: "t", AfterStep: 1}
		tc.edit(r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
