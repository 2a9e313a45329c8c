//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
)

// The task every agent is scripted through, and the state it must leave behind.
const taskPrompt = "Survey the greeter project, add NOTES.md, fix the typo in README.md and show git status."

var finalFiles = map[string]string{
	"README.md": "# Greeter\n\nA tiny greeter. It prints a greeting.\n",
	"NOTES.md":  "# Notes\n\n- greet() lives in greeter/util.py\n",
}

const runTimeout = 3 * time.Minute

// TestRecordSessions runs every tested release of each real CLI through a
// scripted multi-step task against the fake model, checks what it did and that
// pvisor decodes the session it wrote (so a release that changes its format
// fails here first), and (with -record) stores the native session, the initial
// repo and a manifest under testdata/e2e/sessions/<agent>@<version>.
func TestRecordSessions(t *testing.T) {
	for _, a := range agents {
		for _, rel := range tested.Of(a.name) {
			t.Run(a.name+"@"+rel.Version, func(t *testing.T) { recordAgent(t, a, rel) })
		}
	}
}

func recordAgent(t *testing.T, a *agentSpec, rel tested.Release) {
	r := newRun(t, a, releaseBin(t, rel))
	r.rel = rel
	enterLoopbackNetns(t) // from here on this goroutine and its children see only lo
	r.makeRepo(t)
	r.provideFd(t)
	repoTar, err := tarDir(r.repo)
	if err != nil {
		t.Fatal(err)
	}
	r.startFake(t)
	env := a.configure(t, r)
	r.env = r.baseEnv()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		r.env = append(r.env, k+"="+env[k])
	}
	r.argv = append([]string{r.bin}, a.args(r)...)

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	verOut, verErr, err := r.exec(ctx, r.bin, "--version")
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", a.bin, err, verErr)
	}
	verOut = append(verOut, verErr...) // pi prints its version on stderr
	start := time.Now()
	r.stdout, r.stderr, err = r.exec(ctx, r.argv...)
	r.took = time.Since(start)
	t.Logf("%s (%s) ran in %.2fs", a.name, firstLine(verOut), r.took.Seconds())
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", a.name, err, r.diagnose())
	}

	checkServed(t, r)
	for name, want := range finalFiles {
		got, err := os.ReadFile(filepath.Join(r.repo, name))
		if err != nil || string(got) != want {
			t.Errorf("after the run %s = %q (%v), want %q", name, got, err, want)
		}
	}
	if t.Failed() {
		t.Fatalf("the run did not do the scripted task\n%s", r.diagnose())
	}

	s := a.collect(t, ctx, r)
	calls, failed, err := inspectors[a.name](s.data)
	if err != nil {
		t.Fatalf("%s native session %s: %v", a.name, s.nativePath, err)
	}
	for _, f := range failed {
		t.Errorf("a scripted tool call failed in the native session: %s", f)
	}
	if want := scriptCalls(a.script); calls != want {
		t.Errorf("native session holds %d tool calls, the script made %d", calls, want)
	}

	kinds := map[string]int{}
	for _, q := range r.fake.Requests() {
		kinds[q.Kind]++
	}
	envOut := map[string]string{}
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		if v == fakeKey {
			v = "<fake key>"
		}
		envOut[k] = v
	}
	m := manifest{
		Agent: a.name, Package: rel.Package + "@" + rel.Version, CLIVersion: firstLine(verOut), Protocol: string(a.protocol),
		Argv: r.argv[1:], Env: envOut, Config: r.config, Prompt: taskPrompt, RepoPath: r.repo, HomePath: r.home,
		SessionID: s.id, NativePath: s.nativePath,
		Files: map[string]string{"session": s.name, "stdout": "stdout.jsonl", "initial_repo": "repo.tar.gz",
			"requests": "requests.jsonl.gz"},
		Script: a.script, Requests: kinds, ToolCalls: calls,
		RunSeconds: float64(r.took.Milliseconds()) / 1000, RecordedAt: time.Now().UTC().Format(time.RFC3339),
	}
	for name := range s.beside {
		m.Files[name] = name
	}
	out := filepath.Join(t.TempDir(), a.name)
	name := a.name + "@" + rel.Version
	if *record && (*only == "" || slices.Contains(strings.Split(*only, ","), name)) {
		out = filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", name)
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{s.name: s.data, "stdout.jsonl": r.stdout, "repo.tar.gz": repoTar,
		"requests.jsonl.gz": gzipBytes(requestsJSONL(r.fake.Requests()))}
	maps.Copy(files, s.beside)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeJSONFile(filepath.Join(out, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	checkRecording(t, out)
	if *record {
		t.Logf("recorded %s into %s", s.name, out)
	}
}

// checkServed asserts that the CLI walked the whole script: every reply was served
// and some request answered it (its conversation holds all scripted turns).
func checkServed(t *testing.T, r *run) {
	t.Helper()
	n := len(r.agent.script.Replies)
	served := map[int]bool{}
	completed := false
	for _, q := range r.fake.Requests() {
		if q.Kind == fakemodel.KindMain {
			served[q.Reply] = true
		}
		if (q.Kind == fakemodel.KindMain || q.Kind == fakemodel.KindFinal) && q.Turn == n {
			completed = true
		}
		if q.Kind == fakemodel.KindInvalid || q.Kind == fakemodel.KindUnknown || q.Status >= 400 {
			t.Errorf("request %d %s %s was answered %d (%s)", q.Seq, q.Method, q.Path, q.Status, q.Kind)
		}
	}
	for i := 0; i < n; i++ {
		if !served[i] {
			t.Errorf("script reply %d was never requested\n%s", i, r.diagnose())
		}
	}
	if n > 0 && served[n-1] && !completed && len(r.agent.script.Replies[n-1].ToolCalls) > 0 {
		t.Errorf("no request carried the results of the last scripted reply\n%s", r.diagnose())
	}
}

// diagnose summarises a run for a failure message: the tails of the CLI's output and
// what the fake model saw.
func (r *run) diagnose() string {
	var b strings.Builder
	tail := func(name string, data []byte) {
		s := string(data)
		if len(s) > 3000 {
			s = "…" + s[len(s)-3000:]
		}
		b.WriteString("--- " + name + "\n" + s + "\n")
	}
	tail("stderr", r.stderr)
	tail("stdout", r.stdout)
	b.WriteString("--- fake model requests\n")
	if r.fake != nil {
		for _, q := range r.fake.Requests() {
			fmt.Fprintf(&b, "%d %s %s %s turn=%d reply=%d status=%d\n", q.Seq, q.Method, q.Path, q.Kind, q.Turn, q.Reply, q.Status)
		}
	}
	return b.String()
}
