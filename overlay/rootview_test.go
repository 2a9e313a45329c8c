//go:build linux

package overlay

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestViewMounts: the root view rebuilds the real filesystems of the tree,
// parents first and the topmost mount at each point, and leaves out the
// kernel's trees, the workspace (bound separately) and the state dir's
// layers.
func TestViewMounts(t *testing.T) {
	in := strings.Join([]string{
		"22 27 0:21 / /proc rw,relatime - proc proc rw",
		"24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw",
		"25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw",
		"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw",
		"28 27 0:25 / /mnt/tools ro,nosuid,nodev,relatime - tmpfs tools ro",
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw",
		"40 27 0:40 / /tmp rw,relatime - tmpfs tmpfs rw",
		"41 40 0:41 / /tmp rw,relatime - tmpfs tmpfs rw,size=1m",
		"50 27 0:50 / /home/ws rw,relatime - overlay pvisor rw",
		"51 27 0:51 / /state/r1/overlayfs/root rw,relatime - overlay pvisor rw",
		"52 27 0:52 / /work rw,relatime - xfs /dev/vdb rw",
	}, "\n")
	mounts, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Mount    string
		ReadOnly bool
		Super    string
	}
	var out []got
	for _, m := range viewMounts(mounts, Config{Path: "/home/ws"}, NewLayout("/state/r1")) {
		out = append(out, got{m.MountPoint, m.readOnly(), m.SuperOpts})
	}
	want := []got{
		{"/", false, "rw"},
		{"/dev/shm", false, "rw"},
		{"/mnt/tools", true, "ro"},
		{"/tmp", false, "rw,size=1m"},
		{"/work", false, "rw"},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("viewMounts (-want +got):\n%s", diff)
	}
}

// TestRootViewCapturesOutsideWrites: a tool that entered the root view
// writes outside the workspace (a host directory, the state dir) and
// inside it; the host keeps none of it, OutsideChanges names the outside
// files, and drop removes every layer. The control run without the view
// shows the same tool writing the host.
func TestRootViewCapturesOutsideWrites(t *testing.T) {
	requireOverlay(t)
	for _, tc := range []struct {
		name string
		off  bool
	}{{"view", false}, {"no view (control)", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"a.txt": "a\n"})
			outsideDir := filepath.Join(f.base, "host")
			writeTree(t, outsideDir, map[string]string{"keep.txt": "keep\n"})
			outside := filepath.Join(outsideDir, "new.txt")
			stateFile := filepath.Join(filepath.Dir(f.layout.Dir), "journal-forged")
			var env []string
			if tc.off {
				env = []string{envNoRoot + "=1"}
			}
			if e, err := f.run(context.Background(), env, "tool", outside, stateFile, filepath.Join(f.ws, "in.txt")); err != nil || e != (Exit{}) {
				t.Fatalf("Run = %+v, %v", e, err)
			}
			var tool map[string]string
			readJSON(t, filepath.Join(f.scratch, "tool.json"), &tool)
			_, hostErr := os.Stat(outside)
			if tc.off {
				if tool["root"] != "" || !strings.Contains(tool["missing"], "switched off") || hostErr != nil {
					t.Fatalf("control: tool %v, host file err %v; want no view and the write on the host", tool, hostErr)
				}
				return
			}
			if tool["root"] != f.layout.Root || !strings.Contains(tool["out"], "wrote 3") {
				t.Fatalf("tool report %v", tool)
			}
			if hostErr == nil {
				t.Errorf("%s reached the host", outside)
			}
			if _, err := os.Stat(stateFile); err == nil {
				t.Errorf("%s reached the real state dir", stateFile)
			}
			rep, err := Commit(Config{Path: f.ws, Commit: CommitDrop}, f.layout)
			if err != nil {
				t.Fatal(err)
			}
			want := []Change{{outside, Added, TypeFile}, {stateFile, Added, TypeFile}}
			sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
			if diff := cmp.Diff(want, rep.Outside); diff != "" {
				t.Errorf("outside changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Change{{"in.txt", Added, TypeFile}}, rep.Changes); diff != "" {
				t.Errorf("workspace changes (-want +got):\n%s", diff)
			}
			if _, err := os.Lstat(f.layout.Dir); err == nil {
				t.Errorf("drop left %s", f.layout.Dir)
			}
		})
	}
}
