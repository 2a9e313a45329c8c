//go:build e2e

package opencode

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkOpenCodeStageCollect times, in one loop, what a continuation
// spends around the CLI: staging the rebuilt session and collecting it
// afterwards, by the real `opencode import` + `opencode export` (fresh
// home, the recording's repository as cwd) against pvisor's own database
// write from the template + read. The template is made before the timer,
// as the state root keeps it across runs. Real CLI: run the test binary in
// a loopback-only network namespace, e.g.
//
//	go test -tags e2e -c -o /tmp/r.test ./trajectory/opencode && unshare -n /tmp/r.test -test.run '^$' -test.bench OpenCodeStageCollect -test.benchtime 2x
func BenchmarkOpenCodeStageCollect(b *testing.B) {
	if ifs, _ := net.Interfaces(); len(ifs) != 1 || ifs[0].Name != "lo" {
		b.Skip("run inside unshare -n: the real CLI may only see loopback")
	}
	entry := filepath.Join(os.Getenv("PVISOR_E2E_DIR"), "cli", "opencode@1.18.33", "node_modules", ".bin", "opencode")
	if _, err := os.Stat(entry); err != nil {
		b.Skipf("no opencode 1.18.33 under PVISOR_E2E_DIR: %v", err)
	}
	const sid = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	export, _ := filepath.Abs("../../testdata/e2e/sessions/opencode@1.18.33/export.json")
	doc, err := os.ReadFile(export)
	if err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	state := b.TempDir()
	if _, err := template(state, entry, env); err != nil {
		b.Fatal(err)
	}
	fresh := func() (home, ws string) {
		dir := b.TempDir()
		home, ws = filepath.Join(dir, "home"), filepath.Join(dir, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("tar", "-xzf", "../../testdata/e2e/sessions/opencode@1.18.33/repo.tar.gz", "-C", ws).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		return home, ws
	}
	var cli, ours time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		home, ws := fresh()
		b.StartTimer()
		start := time.Now()
		e := append(append([]string(nil), env...), cliEnv(home, "")...)
		if _, _, err := runTool(entry, e, ws, "import", export); err != nil {
			b.Fatal(err)
		}
		if _, _, err := runTool(entry, e, ws, "export", sid); err != nil {
			b.Fatal(err)
		}
		cli += time.Since(start)

		b.StopTimer()
		home, ws = fresh()
		b.StartTimer()
		start = time.Now()
		if err := stageDB(state, entry, env, home, ws, doc); err != nil {
			b.Fatal(err)
		}
		if _, err := readDB(filepath.Join(home, ".local", "share", "opencode"), sid); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
	}
	b.ReportMetric(float64(cli.Milliseconds())/float64(b.N), "cli-ms/op")
	b.ReportMetric(float64(ours.Microseconds())/1000/float64(b.N), "pvisor-ms/op")
	b.ReportMetric(float64(ours)/float64(cli), "x-vs-cli")
}
