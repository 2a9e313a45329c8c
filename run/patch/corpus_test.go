package patch

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir holds real Codex rollouts (see its SOURCES.md).
const corpusDir = "../../../shared/corpus/codex"

// Every apply_patch that succeeded in a real Codex session must parse, and
// its hunks must name exactly the files Codex listed in its summary.
func TestCorpusPatchesParse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if len(files) == 0 {
		t.Skip("corpus not available at " + corpusDir)
	}
	checked := 0
	for _, f := range files {
		calls := map[string]string{} // call_id -> patch text
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var rec struct {
				Payload struct {
					Type      string          `json:"type"`
					Name      string          `json:"name"`
					CallID    string          `json:"call_id"`
					Arguments string          `json:"arguments"`
					Input     string          `json:"input"`
					Output    json.RawMessage `json:"output"`
				} `json:"payload"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			p := rec.Payload
			switch p.Type {
			case "custom_tool_call":
				if p.Name == "apply_patch" {
					calls[p.CallID] = p.Input
				}
			case "function_call":
				var args struct {
					Command []string `json:"command"`
				}
				if json.Unmarshal([]byte(p.Arguments), &args) == nil {
					if text, _, ok := FromArgv(args.Command); ok {
						calls[p.CallID] = text
					}
				}
			case "function_call_output", "custom_tool_call_output":
				text, ok := calls[p.CallID]
				if !ok {
					continue
				}
				out := outputText(p.Output)
				summary, ok := strings.CutPrefix(out, "Success. Updated the following files:\n")
				if !ok {
					continue // rejected by the user, or failed
				}
				pt, err := Parse(text)
				if err != nil {
					t.Errorf("%s %s: %v", filepath.Base(f), p.CallID, err)
					continue
				}
				var got []string
				for _, h := range pt.Hunks {
					switch {
					case h.Op == Add:
						got = append(got, "A "+h.Path)
					case h.Op == Delete:
						got = append(got, "D "+h.Path)
					case h.MoveTo != "":
						got = append(got, "M "+h.MoveTo)
					default:
						got = append(got, "M "+h.Path)
					}
				}
				if want := strings.TrimSuffix(summary, "\n"); strings.Join(got, "\n") != want {
					t.Errorf("%s %s: hunks %q, Codex reported %q", filepath.Base(f), p.CallID, got, want)
				}
				checked++
			}
		}
		fh.Close()
	}
	if checked == 0 {
		t.Fatal("no successful apply_patch calls found in the corpus")
	}
	t.Logf("%d real patches parsed", checked)
}

// outputText unwraps the two shapes of a recorded output: a plain string,
// or a string holding {"output": …, "metadata": …}.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	var wrapped struct {
		Output string `json:"output"`
	}
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &wrapped) == nil {
		return wrapped.Output
	}
	return s
}
