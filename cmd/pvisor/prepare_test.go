package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/result"

	"github.com/google/go-cmp/cmp"
)

func TestPrepareOnlyWritesPlanPrefixJournalAndResult(t *testing.T) {
	for _, tc := range []struct {
		agent, content string
		prefixLines    int
	}{
		{"claude-code", claudeBase, 3},
		{"codex", codexBase, 4},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			dir := t.TempDir()
			traj := filepath.Join(dir, "s.jsonl")
			os.WriteFile(traj, []byte(tc.content), 0o644)
			var stdout, stderr bytes.Buffer
			code := run([]string{"replay", "--prepare-only", "--agent", tc.agent, "--trajectory", traj, "--after-step", "1",
				"--run-id", "r1", "--state-dir", dir + "/state", "--output-dir", dir + "/out", "--boundary-user-prompt", "secret prompt text"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
			}
			res := checkResultLine(t, stdout.Bytes())
			out := filepath.Join(dir, "out", "r1")
			want := map[string]any{"phase": "prepared", "quality": "verified", "agent_status": "not_started", "run_id": "r1",
				"after_step": 1.0, "prefix_model_turns": 1.0, "output_dir": out, "state_dir": filepath.Join(dir, "state", "r1")}
			for k, v := range want {
				if d := cmp.Diff(v, res[k]); d != "" {
					t.Errorf("%s (-want +got):\n%s", k, d)
				}
			}
			bup := res["metadata"].(map[string]any)["boundary_user_prompt"].(map[string]any)
			if bup["requested"] != true || bup["length"] != 18.0 || bup["reason"] != "prepare_only" || bup["injected"] != false {
				t.Errorf("boundary_user_prompt metadata %v", bup)
			}
			// The saved result equals the printed one.
			saved, err := os.ReadFile(filepath.Join(out, "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			var savedRes map[string]any
			json.Unmarshal(saved, &savedRes)
			if d := cmp.Diff(res, savedRes); d != "" {
				t.Errorf("result.json differs from stdout (-stdout +file):\n%s", d)
			}
			var m struct {
				SchemaVersion string `json:"schema_version"`
				Agent         struct{ Name string }
				Source        struct{ Path, SHA256 string }
				Boundary      struct {
					AfterStep int `json:"after_step"`
					ToolCalls int `json:"tool_calls"`
				}
				Batches []struct {
					Ordinal   int
					ToolCalls []struct {
						CallID string `json:"call_id"`
						Name   string
					} `json:"tool_calls"`
				}
			}
			data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if m.SchemaVersion != "sandbox-replay.plan/v1" || m.Agent.Name != tc.agent || m.Boundary.AfterStep != 1 || m.Boundary.ToolCalls != 1 ||
				len(m.Batches) != 1 || len(m.Batches[0].ToolCalls) != 1 || len(m.Source.SHA256) != 64 {
				t.Errorf("manifest: %s", data)
			}
			if bytes.Contains(data, []byte("a.txt")) {
				t.Errorf("manifest must not hold observations: %s", data)
			}
			prefix, err := os.ReadFile(filepath.Join(out, "native", "prepared-prefix.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tc.content, string(prefix)) || strings.Count(string(prefix), "\n") != tc.prefixLines {
				t.Errorf("prefix is not the first %d lines of the source:\n%s", tc.prefixLines, prefix)
			}
			events := journalEvents(t, filepath.Join(out, "replay-events.jsonl"))
			if d := cmp.Diff([]string{"run_started", "plan_validated", "session_rebuilt", "run_finished"}, events); d != "" {
				t.Errorf("journal events (-want +got):\n%s", d)
			}
			// pVisor's prepare-only session_rebuilt says prepared_only.
			recs, _ := result.ReadJournal(filepath.Join(out, "replay-events.jsonl"))
			for i := range recs {
				if recs[i].Name() == "session_rebuilt" && !bytes.Contains(recs[i].Event.Data.Payload, []byte(`"prepared_only":true`)) {
					t.Errorf("session_rebuilt payload %s lacks prepared_only", recs[i].Event.Data.Payload)
				}
			}
			// Neither the prompt text nor anything derived from it but its hash may be stored.
			filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if info != nil && info.Mode().IsRegular() {
					if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("secret prompt text")) {
						t.Errorf("%s holds the boundary prompt text", p)
					}
				}
				return nil
			})
		})
	}
}

func journalEvents(t *testing.T, path string) []string {
	t.Helper()
	recs, err := result.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for i := range recs {
		events = append(events, recs[i].Name())
	}
	return events
}
