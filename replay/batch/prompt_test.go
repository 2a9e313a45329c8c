package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
)

const claudeOneStep = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":"list files"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}}
`

// promptStudy writes a study with a prompt file under a new directory and
// expands it with args.
func promptStudy(t *testing.T, text string, args ...prompt.Arg) []*Run {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"s.jsonl": claudeOneStep, "p.md": text} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := &Spec{File: filepath.Join(dir, "study.toml"), OutputDir: filepath.Join(dir, "out"), Entries: []Entry{{
		Pos: "study.toml:1", Trajectories: []string{"s.jsonl"}, Steps: Steps{List: []int{1}}, Repeats: 1,
		Request: replay.Request{Agent: "claude-code", Mode: replay.PrepareOnly, BoundaryUserPromptFile: filepath.Join(dir, "p.md"), PromptArgs: args},
	}}}
	runs, errs := Expand(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return runs
}

// A run's id follows its prompt arguments, not where the study sits.
func TestRunIDWithPromptFile(t *testing.T) {
	a := promptStudy(t, "Hi {{WHO}}", prompt.Arg{Key: "WHO", Value: "one"})
	b := promptStudy(t, "Hi {{WHO}}", prompt.Arg{Key: "WHO", Value: "one"})
	c := promptStudy(t, "Hi {{WHO}}", prompt.Arg{Key: "WHO", Value: "two"})
	if a[0].ID != b[0].ID {
		t.Errorf("the same study in two directories has ids %s and %s", a[0].ID, b[0].ID)
	}
	if a[0].ID == c[0].ID {
		t.Errorf("different prompt arguments share the id %s", a[0].ID)
	}
}

// A prompt file is checked with the rest of the study, before anything runs.
func TestExpandChecksPromptFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(claudeOneStep), 0o644)
	os.WriteFile(filepath.Join(dir, "p.md"), []byte("x\n{{MISSING}}"), 0o644)
	spec := &Spec{File: filepath.Join(dir, "study.toml"), Entries: []Entry{{
		Pos: "study.toml:3", Trajectories: []string{"s.jsonl"}, Steps: Steps{List: []int{1}}, Repeats: 1,
		Request: replay.Request{Agent: "claude-code", Mode: replay.PrepareOnly, BoundaryUserPromptFile: filepath.Join(dir, "p.md")},
	}}}
	if _, errs := Expand(spec); len(errs) != 1 || !strings.Contains(errs[0].Error(), "study.toml:3: [[runs]]: "+filepath.Join(dir, "p.md")+":2: {{MISSING}} has no value") {
		t.Errorf("errors %v", errs)
	}
}
