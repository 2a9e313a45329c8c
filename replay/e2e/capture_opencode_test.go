//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/tested"
	ocfmt "github.com/pvisor/pvisor/trajectory/opencode"
)

// importOpenCode imports an export document into home's database with the
// real CLI, run in cwd, and checks it reported session id.
func importOpenCode(t *testing.T, bin, home, cwd, doc, id string) {
	t.Helper()
	imp := openCodeCmd(bin, home, cwd, "import", doc)
	if out, err := imp.CombinedOutput(); err != nil || !bytes.Contains(out, []byte(id)) {
		t.Fatalf("opencode import: %v\n%s", err, out)
	}
}

// openCodeCmd is the real CLI with home as its HOME and XDG dirs.
func openCodeCmd(bin, home, cwd string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1"}
	return cmd
}

// TestCaptureOpenCode: the recorded session imported into a fresh HOME's
// database with the real CLI is captured by id (the CLI exports it from a
// copy, the home stays byte-identical), and the bundle restores to the
// recorded conversation in another cwd. pvisor reads the session from the
// copy itself: the bundle holds exactly what the CLI's export prints. An
// unknown id writes nothing.
func TestCaptureOpenCode(t *testing.T) {
	pvisor := pvisorBinary(t)
	rels := tested.Of("opencode")
	rel := rels[len(rels)-1]
	bin := releaseBin(t, rel)
	dirs := recordingDirs(t, "opencode")
	dir := dirs[len(dirs)-1]
	m, err := readManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := mustRead(t, filepath.Join(dir, m.Files["session"]))
	enterLoopbackNetns(t)

	home, cwd := t.TempDir(), t.TempDir()
	importOpenCode(t, bin, home, cwd, filepath.Join(dir, m.Files["session"]), m.SessionID)
	before := treeSums(t, home)
	tmp := t.TempDir()
	store, state := filepath.Join(tmp, "store"), filepath.Join(tmp, "state")
	args := []string{"capture", "--agent", "opencode", "--home", home, "--store", store, "--state-dir", state, "--agent-entrypoint", bin}

	// An id the database does not hold: exit 10 before anything is made.
	res, code, stderr := pvisorRun(t, pvisor, nil, append(args, "--session", "ses_0000000000000000000000nope")...)
	if code != 10 || res.Get("failure.category").Str != "trajectory_error" {
		t.Errorf("unknown id: exit %d, %s\n%s", code, res.Raw, stderr)
	}
	for _, p := range []string{store, state} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("a capture of an unknown id made %s", p)
		}
	}

	res, code, stderr = pvisorRun(t, pvisor, nil, append(args, "--session", m.SessionID)...)
	if code != 0 {
		t.Fatalf("capture: exit %d %s\n%s", code, res.Raw, stderr)
	}
	if via := res.Get("manifest.via"); via.Get("method").Str != "database-read" || via.Get("tool").Str != "opencode" || via.Get("version").Str != rel.Version {
		t.Errorf("manifest.via = %s, want pvisor's read of opencode %s's database", via.Raw, rel.Version)
	}
	if got := res.Get("manifest.origin_cwd").Str; got != realpath(t, cwd) && got != cwd {
		t.Errorf("origin_cwd %q, want the import's cwd %s", got, cwd)
	}
	if after := treeSums(t, home); !reflect.DeepEqual(after, before) {
		t.Errorf("the capture changed the home it read:\nbefore %v\nafter  %v", before, after)
	}
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("the capture left %s in the state root", e.Name())
		}
	}

	bundle := res.Get("bundle").Str
	if bundle != filepath.Join(store, "opencode", m.SessionID) {
		t.Errorf("bundle at %s", bundle)
	}
	// What pvisor read is what the real export prints, byte for byte.
	exported, err := openCodeCmd(bin, home, cwd, "export", m.SessionID).Output()
	if err != nil {
		t.Fatalf("opencode export: %v", err)
	}
	if got := mustRead(t, filepath.Join(bundle, capture.FilesDir, ocfmt.ExportDir, m.SessionID+".json")); !bytes.Equal(got, exported) {
		t.Errorf("the bundled export (%d bytes) is not what opencode export prints (%d bytes)", len(got), len(exported))
	}
	ws := t.TempDir()
	restored, err := capture.Restore(capture.RestoreOptions{Bundle: bundle, Store: ocfmt.Bundled(),
		Root: filepath.Join(t.TempDir(), ".local", "share", "opencode"), Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	doc := mustRead(t, restored.Main)
	if got := gjson.GetBytes(doc, "info.directory").Str; got != realpath(t, ws) {
		t.Errorf("restored info.directory %q, want %s", got, realpath(t, ws))
	}
	if !jsonEqual(t, gjson.GetBytes(doc, "messages").Raw, gjson.GetBytes(recorded, "messages").Raw) {
		t.Errorf("the restored conversation differs from the recording's")
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y) && x != nil
}

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// treeSums maps each regular file under dir to its SHA-256.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		sums[p] = sha256Hex(string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}
