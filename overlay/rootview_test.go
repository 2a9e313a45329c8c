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
// adds, modifies and deletes host files outside the workspace, writes the
// state dir, and writes inside the workspace; the host keeps none of it,
// OutsideChanges names the outside paths, Commit applies only the workspace
// and keeps the outside layers except for drop. The control run without
// the view shows the same tool writing the host; a view the kernel refuses
// leaves the run going without it and says why.
func TestRootViewCapturesOutsideWrites(t *testing.T) {
	requireOverlay(t)
	for _, tc := range []struct {
		name   string
		mode   CommitMode
		env    string
		noView string // ToolRoot's reason when there is no view
	}{
		{name: "drop", mode: CommitDrop},
		{name: "apply", mode: CommitApply},
		{name: "manual", mode: CommitManual},
		{name: "no view (control)", mode: CommitDrop, env: envNoRoot, noView: "switched off"},
		{name: "view refused", mode: CommitDrop, env: envBreakRoot, noView: "no overlay of the file tree outside the workspace (open layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"a.txt": "a\n"})
			host := filepath.Join(f.base, "host")
			writeTree(t, host, map[string]string{"keep.txt": "keep\n", "gone.txt": "gone\n"})
			before := mustSnapshot(t, host)
			added, modified, deleted := filepath.Join(host, "new.txt"), filepath.Join(host, "keep.txt"), filepath.Join(host, "gone.txt")
			stateFile := filepath.Join(filepath.Dir(f.layout.Dir), "journal-forged")
			var env []string
			if tc.env != "" {
				env = []string{tc.env + "=1"}
			}
			if e, err := f.run(context.Background(), env, "tool", added, modified, "rm:"+deleted, stateFile, filepath.Join(f.ws, "in.txt")); err != nil || e != (Exit{}) {
				t.Fatalf("Run = %+v, %v", e, err)
			}
			var tool map[string]string
			readJSON(t, filepath.Join(f.scratch, "tool.json"), &tool)
			if tc.noView != "" {
				_, hostErr := os.Stat(added)
				if tool["view"] != "false" || !strings.Contains(tool["missing"], tc.noView) || hostErr != nil {
					t.Fatalf("tool %v, host file err %v; want no view, missing %q, and the write on the host", tool, hostErr, tc.noView)
				}
				if m := hostMountsAt(t, f.layout.Root); len(m) != 0 {
					t.Errorf("mounts left at %s: %v", f.layout.Root, m)
				}
				return
			}
			if tool["view"] != "true" || !strings.Contains(tool["out"], "changed 5") {
				t.Fatalf("tool report %v", tool)
			}
			if diff := cmp.Diff(before, mustSnapshot(t, host)); diff != "" {
				t.Errorf("the host changed (-before +after):\n%s", diff)
			}
			if _, err := os.Stat(stateFile); err == nil {
				t.Errorf("%s reached the real state dir", stateFile)
			}
			rep, err := Commit(Config{Path: f.ws, Commit: tc.mode}, f.layout)
			if err != nil {
				t.Fatal(err)
			}
			want := []Change{{added, Added, TypeFile}, {modified, Modified, TypeFile}, {deleted, Deleted, TypeFile}, {stateFile, Added, TypeFile}}
			sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
			if diff := cmp.Diff(want, rep.Outside); diff != "" {
				t.Errorf("outside changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Change{{"in.txt", Added, TypeFile}}, rep.Changes); diff != "" {
				t.Errorf("workspace changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, mustSnapshot(t, host)); diff != "" {
				t.Errorf("%s changed the host (-before +after):\n%s", tc.mode, diff)
			}
			_, inErr := os.Stat(filepath.Join(f.ws, "in.txt"))
			_, upperErr := os.Stat(filepath.Join(f.layout.RootUpper, "0", added))
			switch tc.mode {
			case CommitDrop:
				if _, err := os.Lstat(f.layout.Dir); err == nil || rep.OutsideUpper != "" {
					t.Errorf("drop left %s (outside upper %q)", f.layout.Dir, rep.OutsideUpper)
				}
			case CommitApply, CommitManual:
				if rep.OutsideUpper != f.layout.RootUpper || upperErr != nil {
					t.Errorf("%s: outside upper %q, %s: %v; want the layers kept", tc.mode, rep.OutsideUpper, added, upperErr)
				}
			}
			if applied := inErr == nil; applied != (tc.mode == CommitApply) {
				t.Errorf("%s: in.txt applied = %v", tc.mode, applied)
			}
		})
	}
}
