package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/toolenv"
)

// TestSafeExpansion: --safe becomes its preset, twice the same; an
// option that contradicts it is refused.
func TestSafeExpansion(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:8123/v1")
	base := func(mod func(*Request)) *Request {
		r := &Request{Agent: "codex", Trajectory: "t.jsonl", AfterStep: 1, Workspace: "/ws", Run: RunConfig{Safe: true}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	r := base(nil)
	if err := r.applySafe(); err != nil {
		t.Fatal(err)
	}
	want := OverlaynetConfig{Mode: toolenv.NetProxy, Policy: "allowlist", Allow: []string{"127.0.0.1:8123"}}
	if r.Run.Policy != "enforce" || r.Overlay.Path != "/ws" || r.Overlay.Commit != "drop" ||
		r.Overlaynet.Mode != want.Mode || r.Overlaynet.Policy != want.Policy || !slices.Equal(r.Overlaynet.Allow, want.Allow) {
		t.Fatalf("expanded %+v %+v %+v", r.Run, r.Overlay, r.Overlaynet)
	}
	again := *r
	if err := again.applySafe(); err != nil {
		t.Errorf("second expansion: %v", err)
	}
	if rec := base(func(r *Request) { r.Upstream = UpstreamRecorded }); rec.applySafe() != nil || rec.Overlaynet.Policy != "deny" {
		t.Errorf("recorded upstream: %+v", rec.Overlaynet)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Request)
		want string
	}{
		{"policy observe", func(r *Request) { r.Run.Policy = "observe" }, "--policy observe contradicts"},
		{"executor vm", func(r *Request) { r.Run.Executor = "vm" }, "--executor vm contradicts"},
		{"commit apply", func(r *Request) { r.Overlay.Commit = "apply" }, "--overlayfs-commit apply contradicts"},
		{"overlaynet off", func(r *Request) { r.Overlaynet.Mode = "off" }, "--overlaynet off contradicts"},
		{"policy public", func(r *Request) { r.Overlaynet.Policy = "public" }, "--overlaynet-policy public contradicts"},
		{"another host", func(r *Request) { r.Overlaynet.Policy, r.Overlaynet.Allow = "allowlist", []string{"example.com:443"} }, "limits the tools' egress to the model host (127.0.0.1:8123)"},
	} {
		err := base(tc.mod).applySafe()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestSafeReplay: under --safe a replayed shell write to /etc is denied,
// the workspace write lands in the overlay and is dropped, and the result
// records what applied.
func TestSafeReplay(t *testing.T) {
	requireEnforce(t)
	dir := t.TempDir()
	etcX := "/etc/pvisor-safe-" + filepath.Base(dir)
	t.Cleanup(func() { os.Remove(etcX) })
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	traj := codexRollout(t, dir, "echo x > "+etcX, "echo in > in.txt && cat in.txt")
	res := Run(context.Background(), &Request{Agent: "codex", Trajectory: traj, AfterStep: 2, Mode: ReplayOnly, Workspace: ws,
		RunID: "s", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), Upstream: UpstreamRecorded,
		Run: RunConfig{Safe: true}})
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	if _, err := os.Lstat(etcX); err == nil {
		t.Errorf("%s was created under --safe", etcX)
	}
	if _, err := os.Stat(filepath.Join(ws, "in.txt")); err == nil {
		t.Error("the workspace write reached the host: the overlay's changes must be dropped")
	}
	calls := freshOutputs(t, filepath.Join(dir, "out", "s"))
	if !strings.Contains(calls[0], "Permission denied") || !strings.Contains(calls[1], "+in") {
		t.Errorf("observations %q", calls)
	}
	m, _ := res.Metadata["safe"].(map[string]any)
	if m["policy"] != "enforce" || m["executor"] != "host" {
		t.Errorf("metadata.safe %v", res.Metadata["safe"])
	}
}
