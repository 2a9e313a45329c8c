package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/internal/clitest"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
)

type contFixture struct {
	dir, ws, traj string
	req           *Request
}

func newContFixture(t *testing.T, env ...string) *contFixture {
	t.Helper()
	dir := t.TempDir()
	f := &contFixture{dir: dir, ws: filepath.Join(dir, "ws"), traj: clitest.SynthRollout(t, filepath.Join("..", "trajectory", "codex", "testdata", "stage"), dir)}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	entry, err := fakeCodexEntrypoint(dir, env...)
	if err != nil {
		t.Fatal(err)
	}
	f.req = &Request{Agent: "codex", Trajectory: f.traj, AfterStep: 1, Workspace: f.ws, RunID: "c",
		StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		AgentEntrypoint: entry, Upstream: UpstreamRecorded, IdleTimeout: 20 * time.Second}
	return f
}

func (f *contFixture) out(name string) string { return filepath.Join(f.dir, "out", "c", name) }

func (f *contFixture) run(t *testing.T) *result.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Run(ctx, f.req)
}

func stderrOf(f *contFixture) string {
	data, _ := os.ReadFile(f.out("logs/codex-stderr.log"))
	return string(data)
}

// The whole continuation against the stand-in CLI: the recorded upstream
// plays A2, A3 and the answer, the continued rollout is clean, the first
// action compares equal, and the boundary prompt is nowhere on disk.
func TestContinueCompletes(t *testing.T) {
	f := newContFixture(t)
	const prompt = "PVISOR-UNIT-PROMPT: keep going"
	f.req.BoundaryUserPrompt = prompt
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted || *res.Phase != result.PhaseContinued ||
		res.Quality != result.QualityVerified || res.ContinuedSteps != 3 || res.Agent.LaunchSource != result.LaunchExplicit ||
		*res.Agent.Version != "0.171.0" {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	cont, err := os.ReadFile(f.out("native/continued-trajectory.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"__PVISOR_NATIVE_REPLAY_", "/rec/"} {
		if i := bytes.Index(cont, []byte(bad)); i >= 0 {
			t.Errorf("the continued session holds %s: …%s…", bad, cont[max(0, i-100):min(len(cont), i+40)])
		}
	}
	for _, want := range []string{`"model_provider":"pvisor_bridge"`, `"model_provider_id":"pvisor_bridge"`,
		`"current_date":"` + time.Now().UTC().Format("2006-01-02") + `"`, filepath.Join(f.dir, "state", "c", "codex-home") + `/skills/.system`} {
		if !bytes.Contains(cont, []byte(want)) {
			t.Errorf("the staged session lacks %s", want)
		}
	}
	var na result.NextActionComparison
	data, _ := os.ReadFile(f.out("next-action-comparison.json"))
	if err := json.Unmarshal(data, &na); err != nil {
		t.Fatal(err)
	}
	if m := na.Metrics; !m.ToolCountEqual || !m.ToolArgumentsEqual || na.InputCondition != "boundary_user_prompt_appended" {
		t.Errorf("next action: %s", data)
	}
	if got := string(na.Replayed.Tools[0].Arguments); !strings.Contains(got, `/rec/ws`) {
		t.Errorf("the replayed action's workspace path is not mapped back to the recorded one: %s", got)
	}
	bp := res.Metadata["boundary_user_prompt"].(map[string]any)
	if bp["injection_count"] != 3 || bp["position"] != promptPosition {
		t.Errorf("boundary prompt metadata %v", bp)
	}
	events := readEvents(t, f.out("replay-events.jsonl"))
	want := []string{"run_started", "plan_validated", "tool_started", "tool_finished",
		"session_rebuilt", result.EventContinuationStarted, result.EventContinuationFinished, "run_finished"}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	noSecret(t, prompt, filepath.Join(f.dir, "state"), filepath.Join(f.dir, "out"))
}

func noSecret(t *testing.T, secret string, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the secret", p)
			}
			return nil
		})
	}
}

func TestContinueMaxSteps(t *testing.T) {
	f := newContFixture(t)
	f.req.MaxSteps = 2 // one live step after the one-turn prefix
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps || res.ContinuedSteps != 1 {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	var sum Summary
	data, _ := os.ReadFile(f.out("replay-summary.json"))
	json.Unmarshal(data, &sum)
	if sum.ContinuationStatus != result.AgentMaxSteps || sum.ContinuedSteps != 1 {
		t.Errorf("summary %s", data)
	}
}

// failingUpstream answers every request with one status.
type failingUpstream struct{ status int }

func (failingUpstream) Accepts(bridge.Protocol) bool { return true }
func (u failingUpstream) Send(context.Context, *bridge.Request) (*http.Response, error) {
	return &http.Response{StatusCode: u.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"error":{"message":"nope","type":"x"}}`))}, nil
}

func TestContinueFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		edit     func(*Request)
		category string
		exit     int
		phase    string
		says     string
	}{
		{"tampered session is refused", []string{"FAKE_CODEX_MODE=tamper"}, nil,
			result.ContinuationError, 40, result.PhaseReplayed, "differs from item"},
		{"rate limit", nil, func(r *Request) {
			r.Hooks = &Hooks{Upstream: func(bridge.Upstream) bridge.Upstream { return failingUpstream{429} }}
		}, result.ModelRateLimit, 40, result.PhaseReplayed, "429"},
		{"server error", nil, func(r *Request) {
			r.Hooks = &Hooks{Upstream: func(bridge.Upstream) bridge.Upstream { return failingUpstream{503} }}
		}, result.ModelInternalError, 40, result.PhaseReplayed, "503"},
		{"model error, agent exits 0", []string{"FAKE_CODEX_EXIT_ZERO=1"}, func(r *Request) {
			r.Hooks = &Hooks{Upstream: func(bridge.Upstream) bridge.Upstream { return failingUpstream{503} }}
		}, result.ModelInternalError, 40, result.PhaseReplayed, "503"},
		{"wrong token, agent exits 0", []string{"FAKE_CODEX_MODE=token-name", "FAKE_CODEX_EXIT_ZERO=1"}, nil,
			result.ContinuationError, 40, result.PhaseReplayed, "refused (401) for a missing or wrong token, the first POST /v1/responses (request 1 of 1)"},
		{"agent never asks the model", []string{"FAKE_CODEX_MODE=silent"}, nil,
			result.ContinuationError, 40, result.PhaseReplayed, "ended without sending a model request through the bridge"},
		{"idle agent", []string{"FAKE_CODEX_MODE=hang"}, func(r *Request) { r.IdleTimeout = 300 * time.Millisecond },
			result.ContinuationError, 40, result.PhaseReplayed, "no activity"},
		{"untested version", []string{"FAKE_CODEX_VERSION=0.100.0"}, nil,
			result.UnsupportedVersion, 11, result.PhasePrepared, "outside the tested range " + tested.RangeOf("codex").String()},
		{"not codex", []string{"FAKE_CODEX_VERSION_OUTPUT=Python/3.11.2"}, nil,
			result.UnsupportedVersion, 11, result.PhasePrepared, "not the way codex prints its version"},
		{"unknown upstream", nil, func(r *Request) { r.Upstream = "anthropic" },
			result.ConfigurationError, 2, result.PhasePrepared, "cannot serve codex"},
		{"missing entrypoint", nil, func(r *Request) { r.AgentEntrypoint = "/nonexistent/codex" },
			result.ConfigurationError, 2, result.PhasePrepared, "does not exist"},
		{"runtime declares another version", nil, useRuntime(`{"schema_version":"sandbox-playback.agent-runtime/v1","agent":"codex","version":"0.170.0","entrypoint":"bin/codex"}`),
			result.UnsupportedVersion, 11, result.PhasePrepared, "declares codex 0.170.0, but"},
		{"runtime entrypoint leaves the dir", nil, useRuntime(`{"schema_version":"sandbox-playback.agent-runtime/v1","agent":"codex","version":"0.171.0","entrypoint":"../codex"}`),
			result.ConfigurationError, 2, result.PhasePrepared, "must be a relative path inside the runtime directory"},
		{"runtime for another agent", nil, useRuntime(`{"schema_version":"sandbox-playback.agent-runtime/v1","agent":"pi-agent","version":"0.171.0","entrypoint":"bin/codex"}`),
			result.ConfigurationError, 2, result.PhasePrepared, `packages agent "pi-agent"`},
		{"runtime with an unknown key", nil, useRuntime(`{"schema_version":"sandbox-playback.agent-runtime/v1","agent":"codex","version":"0.171.0","entrypoint":"bin/codex","x":1}`),
			result.ConfigurationError, 2, result.PhasePrepared, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newContFixture(t, tc.env...)
			if tc.edit != nil {
				tc.edit(f.req)
			}
			res := f.run(t)
			if res.Failure == nil || res.Failure.Category != tc.category || result.ExitCode(res.Failure) != tc.exit ||
				*res.Phase != tc.phase || !strings.Contains(res.Failure.Message, tc.says) || res.Quality != result.QualityDegraded {
				t.Fatalf("want %s (exit %d, phase %s) saying %q, got %s\nstderr: %s", tc.category, tc.exit, tc.phase, tc.says, res.Line(), stderrOf(f))
			}
			if res.Retryable != result.Retryable(tc.category) {
				t.Errorf("retryable = %v", res.Retryable)
			}
			if tc.phase == result.PhasePrepared {
				// Refused before any tool ran.
				for _, ev := range readEvents(t, f.out("replay-events.jsonl")) {
					if ev == "tool_started" {
						t.Error("a tool ran although the continuation was refused up front")
					}
				}
			}
		})
	}
}

func TestContinueUntestedVersionAllowedIsDegraded(t *testing.T) {
	f := newContFixture(t, "FAKE_CODEX_VERSION=0.190.1")
	f.req.AllowUntestedVersion = true
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted || res.Quality != result.QualityDegraded {
		t.Fatalf("result: %s", res.Line())
	}
	if reasons := res.Metadata["quality_reasons"].([]string); len(reasons) != 1 || !strings.Contains(reasons[0], "0.190.1") {
		t.Errorf("quality reasons %v", reasons)
	}
}

// useRuntime packages the fixture's fake codex as an --agent-runtime
// directory with the given manifest.
func useRuntime(manifest string) func(*Request) {
	return func(r *Request) {
		dir := filepath.Join(filepath.Dir(r.AgentEntrypoint), "runtime")
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.Symlink(r.AgentEntrypoint, filepath.Join(dir, "bin", "codex"))
		os.WriteFile(filepath.Join(dir, agentcli.RuntimeManifestFile), []byte(manifest), 0o644)
		r.AgentEntrypoint, r.AgentRuntime = "", dir
	}
}

func TestContinueFromAgentRuntime(t *testing.T) {
	f := newContFixture(t)
	useRuntime(`{"schema_version":"sandbox-playback.agent-runtime/v1","agent":"codex","version":"0.171.0","entrypoint":"bin/codex"}`)(f.req)
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted || res.Agent.LaunchSource != result.LaunchRuntime ||
		!strings.HasSuffix(*res.Agent.Entrypoint, "/runtime/bin/codex") {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	f2 := newContFixture(t)
	f2.req.AgentRuntime = f2.dir
	if res := f2.run(t); res.Failure == nil || !strings.Contains(res.Failure.Message, "mutually exclusive") {
		t.Errorf("entrypoint and runtime together: %s", res.Line())
	}
}
