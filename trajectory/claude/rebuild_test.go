package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// originals returns each call's recorded observation as a Fresh without a
// toolUseResult, which is how the engine passes a reused observation.
func originals(tr *trajectory.Trajectory, afterStep int) map[string]trajectory.Fresh {
	out := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		if a.Step > afterStep {
			break
		}
		for _, c := range a.Calls {
			out[c.ID] = trajectory.Fresh{Content: c.Observation.Content, IsError: c.Observation.IsError}
		}
	}
	return out
}

// TestRebuildIdentity: with the recorded observations, Rebuild writes the
// same bytes as WritePrefix, for every sample and every step.
func TestRebuildIdentity(t *testing.T) {
	files := corpus.Files(t)
	if m, err := filepath.Glob(filepath.Join(e2eDir, "*.jsonl")); err == nil {
		for _, p := range m {
			if filepath.Base(p) != "stdout.jsonl" {
				files = append(files, p)
			}
		}
	}
	for _, path := range files {
		if _, bad := corpus.Refused[filepath.Base(path)]; bad {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= len(tr.Steps()); n++ {
				var want, got bytes.Buffer
				werr := New().WritePrefix(&want, bytes.NewReader(data), int64(len(data)), tr, n)
				gerr := New().Rebuild(&got, bytes.NewReader(data), int64(len(data)), tr, n, originals(tr, n))
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("step %d: WritePrefix %v, Rebuild %v", n, werr, gerr)
				}
				if werr != nil {
					continue // a step the file cannot be cut after
				}
				if !bytes.Equal(want.Bytes(), got.Bytes()) {
					t.Fatalf("step %d: rebuilt prefix differs:\n%s", n, cmp.Diff(want.String(), got.String()))
				}
			}
		})
	}
}

func resultEntry(uuid, parent, content, extra string) string {
	return `{"parentUuid":"` + parent + `","isSidechain":false,"type":"user","message":{"role":"user","content":[` + content +
		`]},"uuid":"` + uuid + `","toolUseResult":{"stdout":"old","stderr":""}` + extra + `,"sessionId":"s1"}`
}

// TestRebuildChanged: a changed observation rewrites exactly its entry, in
// the representation the entry had, and the file still decodes to the same
// steps with the new content.
func TestRebuildChanged(t *testing.T) {
	head := []string{
		prompt("u1", "", "go"),
		asst("a1", "u1", "m1", use("t1", "Bash", `{"command":"ls"}`)),
	}
	tail := []string{
		asst("a2", "r1", "m2", use("t2", "Read", `{"file_path":"/p/x"}`)),
		resultEntry("r2", "a2", `{"tool_use_id":"t2","type":"tool_result","content":"1\tx"}`, ""),
		asst("a3", "r2", "m3", text("done")),
	}
	for _, tt := range []struct {
		name   string
		result string // the t1 result entry
		fresh  trajectory.Fresh
		want   string // the rewritten entry
	}{
		{"string content and a fresh toolUseResult",
			resultEntry("r1", "a1", `{"tool_use_id":"t1","type":"tool_result","content":"a\nb","is_error":false}`, ""),
			trajectory.Fresh{Content: "a\nc\u2014<&>", Native: json.RawMessage(`{"stdout":"a\nc","stderr":""}`)},
			`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"a\nc` + "\u2014" + `<&>","is_error":false}]},"uuid":"r1","toolUseResult":{"stdout":"a\nc","stderr":""},"sessionId":"s1"}`},
		{"array content stays an array, stale toolUseResult goes",
			resultEntry("r1", "a1", `{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, ""),
			trajectory.Fresh{Content: "new"},
			`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"new"}]}]},"uuid":"r1","sessionId":"s1"}`},
		{"a result that now fails",
			resultEntry("r1", "a1", `{"tool_use_id":"t1","type":"tool_result","content":"ok","is_error":false}`, ""),
			trajectory.Fresh{Content: "Exit code 1", IsError: true, Native: json.RawMessage(`"Error: Exit code 1"`)},
			`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 1","is_error":true,"tool_use_id":"t1"}]},"uuid":"r1","toolUseResult":"Error: Exit code 1","sessionId":"s1"}`},
		{"an error that now succeeds",
			resultEntry("r1", "a1", `{"type":"tool_result","content":"Exit code 1","is_error":true,"tool_use_id":"t1"}`, ""),
			trajectory.Fresh{Content: "fine", Native: json.RawMessage(`{"stdout":"fine"}`)},
			`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"fine","is_error":false}]},"uuid":"r1","toolUseResult":{"stdout":"fine"},"sessionId":"s1"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := file(append(append(append([]string{}, head...), tt.result), tail...)...)
			tr, err := decodeString(src)
			if err != nil {
				t.Fatal(err)
			}
			fresh := originals(tr, 2)
			fresh["t1"] = tt.fresh
			var out bytes.Buffer
			if err := New().Rebuild(&out, strings.NewReader(src), int64(len(src)), tr, 2, fresh); err != nil {
				t.Fatal(err)
			}
			var prefix bytes.Buffer
			if err := New().WritePrefix(&prefix, strings.NewReader(src), int64(len(src)), tr, 2); err != nil {
				t.Fatal(err)
			}
			got, orig := strings.Split(out.String(), "\n"), strings.Split(prefix.String(), "\n")
			if len(got) != len(orig) {
				t.Fatalf("%d lines, want %d", len(got), len(orig))
			}
			for i := range got {
				if i == 2 {
					if got[i] != tt.want {
						t.Errorf("rewritten entry:\n%s", cmp.Diff(tt.want, got[i]))
					}
					if !gjson.Valid(got[i]) {
						t.Errorf("rewritten entry is not JSON")
					}
				} else if got[i] != orig[i] {
					t.Errorf("line %d changed:\n%s", i+1, cmp.Diff(orig[i], got[i]))
				}
			}
			back, err := New().Decode(bytes.NewReader(out.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Steps()) != 2 {
				t.Fatalf("%d steps after rebuild", len(back.Steps()))
			}
			obs := back.Steps()[0].Calls[0].Observation
			if obs.Content != tt.fresh.Content || obs.IsError != tt.fresh.IsError {
				t.Errorf("decoded %q error=%v, want %q error=%v", obs.Content, obs.IsError, tt.fresh.Content, tt.fresh.IsError)
			}
		})
	}
}

func TestRebuildNeedsEveryCall(t *testing.T) {
	src := file(prompt("u1", "", "go"), asst("a1", "u1", "m1", use("t1", "Bash", `{"command":"ls"}`)),
		res("r1", "a1", "t1", "x"), asst("a2", "r1", "m2", text("ok")))
	tr, err := decodeString(src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = New().Rebuild(&out, strings.NewReader(src), int64(len(src)), tr, 1, map[string]trajectory.Fresh{})
	if err == nil || !strings.Contains(err.Error(), "no fresh observation for call t1") {
		t.Fatalf("got %v", err)
	}
	if err := New().Rebuild(&out, strings.NewReader(src), int64(len(src)), tr, 2, originals(tr, 1)); err == nil {
		t.Fatal("a boundary past the last step should fail")
	}
}

func TestStagePath(t *testing.T) {
	got := StagePath("/state/claude-config", "/tmp/pvisor-e2e/claude-code/repo", "f9e2")
	if want := "/state/claude-config/projects/-tmp-pvisor-e2e-claude-code-repo/f9e2.jsonl"; got != want {
		t.Errorf("StagePath = %s, want %s", got, want)
	}
}

func TestDecodeCwd(t *testing.T) {
	for name, want := range map[string]string{
		"codemie_-tmp-private_4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": "/tmp/private",
		"ccviewer_fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl":             "/path/to/Demo",
	} {
		data, err := os.ReadFile(filepath.Join(dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Cwd != want {
			t.Errorf("%s: cwd %q, want %q", name, tr.Cwd, want)
		}
	}
}
