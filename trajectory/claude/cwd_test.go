package claude

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

// A session that cd's into a subdirectory, is resumed (a new process, whose
// shell starts at the project directory again, as every entry's cwd
// records), then runs pwd and a Grep: the calls after the resume run at the
// project root, not where the cd before the resume left the shell.
func TestRecordedCwdAcrossResume(t *testing.T) {
	const rec = "/home/u/proj"
	entry := func(typ, uuid, parent, cwd, content string) string {
		msg := `{"role":"user","content":` + content + `}`
		if typ == "assistant" {
			msg = `{"id":"m` + uuid + `","role":"assistant","content":` + content + `}`
		}
		return `{"type":"` + typ + `","uuid":"` + uuid + `","parentUuid":` + parent + `,"sessionId":"s","version":"2.1.7","cwd":"` + cwd + `","message":` + msg + "}\n"
	}
	use := func(id, name, input string) string {
		return `[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]`
	}
	res := func(id, out string) string {
		return `[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + out + `"}]`
	}
	src := entry("user", "u1", "null", rec, `"go"`) +
		entry("assistant", "a1", `"u1"`, rec, use("t1", "Bash", `{"command":"cd sub"}`)) +
		entry("user", "u2", `"a1"`, rec+"/sub", res("t1", "")) +
		entry("assistant", "a2", `"u2"`, rec+"/sub", use("t2", "Bash", `{"command":"pwd"}`)) +
		entry("user", "u3", `"a2"`, rec+"/sub", res("t2", rec+"/sub")) +
		// The resume: a new process at the project root.
		entry("user", "u4", `"u3"`, rec, `"continue"`) +
		entry("assistant", "a3", `"u4"`, rec, use("t3", "Bash", `{"command":"pwd"}`)) +
		entry("user", "u5", `"a3"`, rec, res("t3", rec)) +
		entry("assistant", "a4", `"u5"`, rec, use("t4", "Grep", `{"pattern":"needle","output_mode":"files_with_matches"}`)) +
		entry("user", "u6", `"a4"`, rec, res("t4", `Found 1 file\\ntop.txt`))
	tr, err := New().Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "top.txt"), []byte("needle\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "sub", "inner.txt"), []byte("hay\n"), 0o644)
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: tr.Cwd,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var got []string
	for _, a := range tr.Steps() {
		for i := range a.Calls {
			f, err := sess.Execute(context.Background(), a.Step, &a.Calls[i])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.ReplaceAll(strings.TrimSpace(f.Content), ws, "{WS}"))
		}
	}
	want := []string{"", "{WS}/sub", "{WS}", "Found 1 file\n" + rec + "/top.txt"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("observations (-want +got):\n%s", d)
	}
}
