package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// writeManifest streams the manifest batch by batch; what it writes must be
// what encoding the whole manifest at once writes, for every agent's plans,
// late boundaries (many batches) and the awkward characters included.
func TestWriteManifestMatchesWholeEncoding(t *testing.T) {
	corpus := "../testdata/trajectories/"
	for _, tc := range []struct{ agent, src string }{
		{"claude-code", "claude-code/agentcmd_full-session-four.jsonl"},
		{"codex", "codex/codemie_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"},
		{"pi", "pi/pimono_before-compaction.jsonl"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			path := corpus + tc.src
			p, err := BuildPlan(&Request{Agent: tc.agent, Trajectory: path, AfterStep: 1, Mode: PrepareOnly})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := agents.Lookup(tc.agent)
			src, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := f.Decode(src, trajectory.Options{SkipObservationContent: true})
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The latest step the file can be cut after (a torn last call
			// has no result).
			var late *Plan
			for last := len(whole.Steps()); late == nil && last > 1; last-- {
				late, _ = BuildPlan(&Request{Agent: tc.agent, Trajectory: path, AfterStep: last, Mode: PrepareOnly, AllowStaleObservations: true})
			}
			if late == nil {
				t.Fatal("no step after the first can be cut")
			}
			if len(late.Manifest.Batches) < 2 {
				t.Fatalf("the latest plan has %d batches; the case tests nothing", len(late.Manifest.Batches))
			}
			odd := late.Manifest
			odd.Batches = append([]ManifestBatch(nil), odd.Batches...)
			odd.Batches[0].ToolCalls = append([]ManifestCall{{Ordinal: 9, CallID: "c<&>", Name: "x\u2028y",
				Arguments: json.RawMessage(`{"cmd":"a && b < c","nested":{"k":[1,{"é":"\u00e9"}]}}`)}}, odd.Batches[0].ToolCalls...)
			empty := p.Manifest
			empty.Batches = nil
			for name, m := range map[string]*Manifest{"first step": &p.Manifest, "last step": &late.Manifest, "odd characters": &odd, "no batches": &empty} {
				dir := t.TempDir()
				want, got := filepath.Join(dir, "want.json"), filepath.Join(dir, "got.json")
				if err := result.WriteJSON(want, m); err != nil {
					t.Fatal(err)
				}
				if err := writeManifest(got, m); err != nil {
					t.Fatal(err)
				}
				w, _ := os.ReadFile(want)
				g, _ := os.ReadFile(got)
				if !bytes.Equal(w, g) {
					i := 0
					for i < min(len(w), len(g)) && w[i] == g[i] {
						i++
					}
					t.Errorf("%s: streamed manifest differs at byte %d of %d:\nwhole:    %q\nstreamed: %q", name, i, len(w), w[max(0, i-40):min(len(w), i+40)], g[max(0, i-40):min(len(g), i+40)])
				}
			}
		})
	}
}
