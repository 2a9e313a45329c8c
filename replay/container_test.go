package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/toolenv"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/containertest"
)

func requireContainer(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("--executor container needs tool isolation (root)")
	}
	if err := (toolrun.Isolation{Enabled: true}).Probe(); err != nil {
		t.Skipf("namespaces are not available here: %v", err)
	}
	return containertest.Busybox(t)
}

// containerReplay replays cmds (Codex exec_command calls) under
// --executor container with run, and returns the result and the fresh
// observations' diffs.
func containerReplay(t *testing.T, dir string, run RunConfig, cmds ...string) (map[string]any, []string) {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "in-ws.txt"), []byte("from-the-workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	traj := codexRollout(t, dir, cmds...)
	run.Executor = toolenv.ExecutorContainer
	req := &Request{Agent: "codex", Trajectory: traj, AfterStep: len(cmds), Mode: ReplayOnly, Workspace: ws,
		RunID: "c", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), Run: run}
	res := Run(context.Background(), req)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	if out, ok := res.Metadata["writes_outside_workspace"]; ok || res.Quality != "verified" {
		// The container's files are an overlay dropped with the run.
		t.Errorf("quality %s, writes_outside_workspace %v", res.Quality, out)
	}
	ro, _ := res.Metadata["run_options"].(map[string]any)
	if ro["executor"] != "container" || ro["container"] == nil {
		t.Errorf("run_options %v: no container executor recorded", ro)
	}
	if ti, _ := res.Metadata["tool_isolation"].(map[string]any); !strings.Contains(strings.Join(ti["mechanisms"].([]string), " "), "container-root") {
		t.Errorf("tool_isolation %v lacks container-root", ti)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "c", "container")); err == nil {
		t.Error("the container's layer is left in the state dir")
	}
	return ro["container"].(map[string]any), freshOutputs(t, filepath.Join(dir, "out", "c"))
}

// TestExecutorContainerRootfs: replayed shell calls run in the busybox
// root (its os-release, its /bin/busybox), see the workspace at its own
// path, and a write to /etc changes neither the root dir given nor the
// host.
func TestExecutorContainerRootfs(t *testing.T) {
	rootfs := requireContainer(t)
	dir := t.TempDir()
	name := "pvisor-container-" + filepath.Base(dir)
	ws := filepath.Join(dir, "ws")
	_, diffs := containerReplay(t, dir, RunConfig{Rootfs: rootfs},
		"cat /etc/os-release; ls /bin/busybox",
		"pwd; cat "+ws+"/in-ws.txt",
		"echo made > /etc/"+name+" && cat /etc/"+name,
		// apply_patch is pvisor's in-process file tool: it writes the
		// container's /etc, where the next shell call finds it.
		addPatch("/etc/"+name+"-patch"),
		"cat /etc/"+name+"-patch")
	for i, want := range []string{"+ID=pvisor-busybox-test", "+" + ws + "\n+from-the-workspace", "+made", "", "+hi"} {
		if i >= len(diffs) || !strings.Contains(diffs[i], want) {
			t.Errorf("call %d: observation diff %q lacks %q", i+1, diffs, want)
		}
	}
	for _, p := range []string{"/etc/" + name, filepath.Join(rootfs, "etc", name), "/etc/" + name + "-patch", filepath.Join(rootfs, "etc", name+"-patch")} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was written by the container", p)
		}
	}
}

// TestExecutorContainerImage: an OCI layout's layers, a whiteout among
// them, are the tools' root; the result names the image's digest.
func TestExecutorContainerImage(t *testing.T) {
	bb := requireContainer(t)
	dir := t.TempDir()
	busybox, err := os.ReadFile(filepath.Join(bb, "bin", "busybox"))
	if err != nil {
		t.Fatal(err)
	}
	digest := containertest.OCILayout(t, filepath.Join(dir, "img"),
		[]containertest.Entry{{Name: "bin/busybox", Body: string(busybox), Mode: 0o755}, {Name: "bin/sh", Link: "busybox"},
			{Name: "bin/bash", Link: "busybox"}, {Name: "bin/cat", Link: "busybox"}, {Name: "bin/ls", Link: "busybox"},
			{Name: "etc/gone", Body: "lower"}, {Name: "etc/kept", Body: "layer-one"}},
		[]containertest.Entry{{Name: "etc/.wh.gone"}, {Name: "etc/kept", Body: "layer-two"}, {Name: "bin/bash", Body: "#!/bin/sh\nexec /bin/sh \"$@\"\n", Mode: 0o755}})
	meta, diffs := containerReplay(t, dir, RunConfig{Image: filepath.Join(dir, "img")},
		"cat /etc/kept; ls /etc")
	if len(diffs) != 1 || !strings.Contains(diffs[0], "+layer-two") || strings.Contains(diffs[0], "gone") {
		t.Errorf("observation diff %q: want layer two's etc/kept and no etc/gone", diffs)
	}
	if meta["image_digest"] != digest || meta["image_layers"] != 2 {
		t.Errorf("run_options.container %v, want image_digest %s and 2 layers", meta, digest)
	}
}

// TestSafeContainer: --safe composes with --executor container: in the
// container, Landlock denies the write to /etc, the workspace write lands
// in the workspace overlay and is dropped, and metadata.safe says
// container.
func TestSafeContainer(t *testing.T) {
	requireEnforce(t)
	rootfs := requireContainer(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	traj := codexRollout(t, dir, "cat /etc/os-release; echo x > /etc/pvisor-safe-ct", "echo in > in.txt && cat in.txt")
	res := Run(context.Background(), &Request{Agent: "codex", Trajectory: traj, AfterStep: 2, Mode: ReplayOnly, Workspace: ws,
		RunID: "s", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), Upstream: UpstreamRecorded,
		Run: RunConfig{Safe: true, Executor: toolenv.ExecutorContainer, Rootfs: rootfs}})
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	calls := freshOutputs(t, filepath.Join(dir, "out", "s"))
	if len(calls) != 2 || !strings.Contains(calls[0], "+ID=pvisor-busybox-test") || !strings.Contains(calls[0], "ermission denied") || !strings.Contains(calls[1], "+in") {
		t.Errorf("observations %q", calls)
	}
	if _, err := os.Stat(filepath.Join(ws, "in.txt")); err == nil {
		t.Error("the workspace write reached the host: the overlay's changes must be dropped")
	}
	if m, _ := res.Metadata["safe"].(map[string]any); m["executor"] != "container" || m["policy"] != "enforce" {
		t.Errorf("metadata.safe %v", res.Metadata["safe"])
	}
}

// TestExecutorContainerRefusals: container without a root, with two,
// a root given without the container executor, and vm are refused with
// the flag to use.
func TestExecutorContainerRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		run  RunConfig
		want string
	}{
		{RunConfig{Executor: "container"}, "add --container-rootfs DIR"},
		{RunConfig{Executor: "container", Rootfs: dir, Image: dir}, "give one"},
		{RunConfig{Rootfs: dir}, "add --executor container"},
		{RunConfig{Executor: "container", Image: dir}, "no index.json"},
		{RunConfig{Executor: "vm"}, "--executor vm is not built"},
	} {
		err := toolenv.CheckRunOptions(tc.run.Executor, tc.run.Policy, toolenv.ContainerConfig{Rootfs: tc.run.Rootfs, Image: tc.run.Image})
		if os.Geteuid() != 0 && tc.run.Executor == "container" && tc.want != "add --container-rootfs DIR" && tc.want != "give one" {
			tc.want = "needs root"
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.run, err, tc.want)
		}
	}
}
