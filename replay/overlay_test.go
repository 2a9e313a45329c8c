package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/replay/internal/clitest"
	"github.com/pvisor/pvisor/trajectory"
)

// TestMain lets this test binary be the overlay worker, as pvisor's main is:
// the engine re-executes /proc/self/exe inside the new namespaces.
func TestMain(m *testing.M) {
	if overlay.IsChild() {
		overlay.ChildMain(func() int {
			old := lookupFormat
			lookupFormat = func(name string) (trajectory.Format, bool) {
				if name == "lines" {
					return lineFormat{}, true
				}
				return old(name)
			}
			req, err := ChildRequest()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			res := Run(context.Background(), req)
			os.Stdout.Write(res.Line())
			return 0
		})
	}
	cleanup, err := clitest.EmptyHome()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func overlayAvailable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("overlayfs needs root")
	}
	if data, _ := os.ReadFile("/proc/filesystems"); !containsWord(string(data), "overlay") {
		t.Skip("kernel has no overlayfs")
	}
}

func containsWord(s, w string) bool { return slices.Contains(strings.Fields(s), w) }

func TestReplayInOverlay(t *testing.T) {
	overlayAvailable(t)
	withLineFormat(t, lineFormat{})
	for _, commit := range []string{"drop", "apply", "manual"} {
		t.Run(commit, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
			os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("k\n"), 0o644)
			traj := writeLines(t, dir,
				`{"id":"c1","cmd":"echo new > b.txt && rm a.txt && echo k2 >> keep.txt","obs":""}`,
				`{"id":"c2","cmd":"cat b.txt; ls","obs":"new\nb.txt\nkeep.txt\n"}`)
			res := Run(context.Background(), &Request{Agent: "lines", Trajectory: traj, AfterStep: 2, Mode: ReplayOnly,
				RunID: "r", StateRoot: dir + "/state", OutputRoot: dir + "/out",
				Overlay: OverlayConfig{Path: ws, Commit: commit}})
			if res.Failure != nil {
				t.Fatalf("failure: %+v", res.Failure)
			}
			if res.ReplayedToolCalls != 2 || *res.Phase != "replayed" {
				t.Errorf("replayed %d phase %s", res.ReplayedToolCalls, *res.Phase)
			}
			// The second call saw the first one's writes through the merged view.
			data, _ := os.ReadFile(filepath.Join(dir, "out", "r", "observation-comparison.json"))
			var comps []CallComparison
			json.Unmarshal(data, &comps)
			if len(comps) != 2 || !comps[1].Exact {
				t.Errorf("comparison: %s", data)
			}
			meta, _ := json.Marshal(res.Metadata["overlayfs"])
			var ov struct {
				Commit  string
				Changes []overlay.Change
			}
			json.Unmarshal(meta, &ov)
			wantChanges := []overlay.Change{{Path: "a.txt", Kind: "deleted", Type: "file"}, {Path: "b.txt", Kind: "added", Type: "file"}, {Path: "keep.txt", Kind: "modified", Type: "file"}}
			if d := cmp.Diff(wantChanges, ov.Changes); d != "" || ov.Commit != commit {
				t.Errorf("overlay metadata %s (-want +got):\n%s", meta, d)
			}
			_, aErr := os.Stat(filepath.Join(ws, "a.txt"))
			b, bErr := os.ReadFile(filepath.Join(ws, "b.txt"))
			keep, _ := os.ReadFile(filepath.Join(ws, "keep.txt"))
			switch commit {
			case "apply":
				if aErr == nil || bErr != nil || string(b) != "new\n" || string(keep) != "k\nk2\n" {
					t.Errorf("apply: a.txt err %v, b.txt %q %v, keep %q", aErr, b, bErr, keep)
				}
			default:
				if aErr != nil || bErr == nil || string(keep) != "k\n" {
					t.Errorf("%s: workspace changed: a.txt err %v, b.txt err %v, keep %q", commit, aErr, bErr, keep)
				}
			}
			// The saved result carries the overlay report too.
			saved, _ := os.ReadFile(filepath.Join(dir, "out", "r", "result.json"))
			var savedRes map[string]any
			json.Unmarshal(saved, &savedRes)
			if _, ok := savedRes["metadata"].(map[string]any)["overlayfs"]; !ok {
				t.Errorf("result.json lacks overlayfs metadata")
			}
			mounts, _ := os.ReadFile("/proc/self/mountinfo")
			if containsWord(string(mounts), ws) {
				t.Errorf("mount of %s left on the host", ws)
			}
		})
	}
}
