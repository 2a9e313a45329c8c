//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/openhands"
	ohrunner "github.com/pvisor/pvisor/trajectory/openhands/runner"
)

// BenchmarkOpenHandsRunnerStartup measures the start-up of pvisor's
// OpenHands runner (process start to its first model request: python, the
// SDK's imports, the rebuilt events written into a new conversation's event
// store and reopened, the agent built) against the SDK's own start of a new
// conversation (record_ohsdk.py: the same Agent, tools and
// LocalConversation, send_message, run), both against the fake model in a
// loopback-only namespace, with the newest tested release. It reports
// runner/sdk as "ratio".
//
//	go test -tags e2e -run '^$' -bench OpenHandsRunnerStartup -benchtime 3x ./replay/e2e/
func BenchmarkOpenHandsRunnerStartup(b *testing.B) {
	rels := tested.Of(openhands.AgentName)
	rel := rels[len(rels)-1]
	bin := rel.Path(e2eDir(b))
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("%s %s not installed: run testdata/e2e/install-clis.sh (it needs Python >= 3.12)", rel.Agent, rel.Version)
	}
	enterLoopbackNetns(b)
	work := b.TempDir()
	dir := filepath.Join(projectRoot(b), "trajectory", "openhands", "testdata", "recorded", rel.Version)
	data, err := os.ReadFile(filepath.Join(dir, ohRecording))
	if err != nil {
		b.Fatal(err)
	}
	tr, err := openhands.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := openhands.New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 1); err != nil {
		b.Fatal(err)
	}
	events := filepath.Join(work, "rebuilt-events.jsonl")
	runner := filepath.Join(work, "runner.py")
	os.WriteFile(events, prefix.Bytes(), 0o600)
	os.WriteFile(runner, ohrunner.Script, 0o600)
	rec := filepath.Join(dir, "..", "record_ohsdk.py")
	ws := filepath.Join(work, "ws")
	os.Mkdir(ws, 0o755)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "TERM=dumb", "OPENHANDS_SUPPRESS_BANNER=1",
		"LITELLM_LOCAL_MODEL_COST_MAP=True", "OPENAI_API_KEY=" + fakeKey}
	py := ohVenvPython(bin)

	var runnerTotal, sdkTotal time.Duration
	for i := 0; i < b.N; i++ {
		url := serveFinish(b)
		req, _ := json.Marshal(map[string]any{"events": events, "persistence_dir": filepath.Join(work, "runner-conv"),
			"conversation_id": uuid.NewString(), "workspace": ws, "api_base": url.base + "/v1", "model": "openai/fake-model"})
		os.WriteFile(filepath.Join(work, "req.json"), req, 0o600)
		runnerTotal += firstRequest(b, url, env, ws, py, runner, filepath.Join(work, "req.json"))

		url = serveFinish(b)
		sdkTotal += firstRequest(b, url, env, ws, py, rec, ws, filepath.Join(work, "sdk-conv"), url.base+"/v1", "noop")
	}
	b.ReportMetric(float64(runnerTotal.Milliseconds())/float64(b.N), "runner-ms/op")
	b.ReportMetric(float64(sdkTotal.Milliseconds())/float64(b.N), "sdk-ms/op")
	b.ReportMetric(float64(runnerTotal)/float64(sdkTotal), "ratio")
}

// serveFinish serves a model whose every reply calls finish, so both
// programs end right after their first request.
func serveFinish(b *testing.B) fakeURL {
	return serveRepeated(b, fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{fn("finish", `{"message":"done"}`)}})
}
