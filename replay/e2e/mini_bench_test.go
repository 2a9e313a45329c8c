//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/miniswe"
	minirunner "github.com/pvisor/pvisor/trajectory/miniswe/runner"
)

// BenchmarkMiniRunnerStartup measures the start-up of pvisor's mini runner
// (process start to its first model request: python, mini's imports, the
// agent built from the saved config, messages restored) against mini's own
// (`mini` CLI start to its first model request), both against the fake
// model in a loopback-only namespace, with the newest tested release. It
// reports runner/mini as "ratio".
//
//	go test -tags e2e -run '^$' -bench MiniRunnerStartup -benchtime 3x ./replay/e2e/
func BenchmarkMiniRunnerStartup(b *testing.B) {
	rels := tested.Of(miniswe.AgentName)
	rel := rels[len(rels)-1]
	bin := rel.Path(e2eDir(b))
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("%s %s not installed: run testdata/e2e/install-clis.sh", rel.Agent, rel.Version)
	}
	enterLoopbackNetns(b)
	work := b.TempDir()
	src := filepath.Join(projectRoot(b), "trajectory", "miniswe", "testdata", "recorded", rel.Version, "last_mini_run.traj.json")
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := miniswe.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := miniswe.New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 1); err != nil {
		b.Fatal(err)
	}
	rebuilt := filepath.Join(work, "rebuilt.traj.json")
	runner := filepath.Join(work, "runner.py")
	os.WriteFile(rebuilt, prefix.Bytes(), 0o600)
	os.WriteFile(runner, minirunner.Script, 0o600)
	ws := filepath.Join(work, "ws")
	os.Mkdir(ws, 0o755)
	env := []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "TERM=dumb",
		"MSWEA_CONFIGURED=true", "MSWEA_SILENT_STARTUP=1", "MSWEA_COST_TRACKING=ignore_errors",
		"MSWEA_GLOBAL_CONFIG_DIR=" + filepath.Join(work, "cfg"), "LITELLM_LOCAL_MODEL_COST_MAP=True", "OPENAI_API_KEY=" + fakeKey}
	py, _ := filepath.EvalSymlinks(bin)
	py = filepath.Join(filepath.Dir(py), "python")

	var runnerTotal, miniTotal time.Duration
	for i := 0; i < b.N; i++ {
		url := serveSubmit(b)
		req, _ := json.Marshal(map[string]any{"trajectory": rebuilt, "output": filepath.Join(work, "out.json"), "workspace": ws,
			"api_base": url.base + "/v1", "prefix_model_calls": 1})
		os.WriteFile(filepath.Join(work, "req.json"), req, 0o600)
		runnerTotal += firstRequest(b, url, env, ws, py, runner, filepath.Join(work, "req.json"))

		url = serveSubmit(b)
		miniTotal += firstRequest(b, url, env, ws, bin, "-y", "--exit-immediately", "-l", "0", "-t", "noop",
			"-m", "openai/fake-model", "-c", "mini.yaml", "-c", "model.model_kwargs.api_base="+url.base+"/v1",
			"-o", filepath.Join(work, "mini.json"))
	}
	b.ReportMetric(float64(runnerTotal.Milliseconds())/float64(b.N), "runner-ms/op")
	b.ReportMetric(float64(miniTotal.Milliseconds())/float64(b.N), "mini-ms/op")
	b.ReportMetric(float64(runnerTotal)/float64(miniTotal), "ratio")
}

type fakeURL struct {
	base string
	srv  *fakemodel.Server
}

// serveSubmit serves a model whose every reply submits, so both programs
// end right after their first request.
func serveSubmit(b *testing.B) fakeURL {
	return serveRepeated(b, fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{fn("bash", `{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}`)}})
}

// serveRepeated serves a model that gives every request the same reply.
func serveRepeated(b *testing.B, r fakemodel.Reply) fakeURL {
	var s fakemodel.Script
	for i := 0; i < 8; i++ {
		s.Replies = append(s.Replies, r)
	}
	f := fakemodel.New(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return fakeURL{base: "http://" + ln.Addr().String(), srv: f}
}

// firstRequest runs argv to its end and returns the time from its start to
// the fake model's first request.
func firstRequest(b *testing.B, u fakeURL, env []string, dir string, argv ...string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", filepath.Base(argv[0]), err, out.Bytes())
	}
	reqs := u.srv.Requests()
	if len(reqs) == 0 {
		b.Fatalf("%s made no model request\n%s", filepath.Base(argv[0]), out.Bytes())
	}
	return reqs[0].Time.Sub(start)
}
