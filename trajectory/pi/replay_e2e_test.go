package pi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// e2eDir holds sessions the real pi CLI (0.73.1) recorded against a
// scripted model, with the workspace they started from.
// e2eDirs are the recordings of real pi releases (testdata/e2e/README.md).
const e2eDirs = "../../testdata/e2e/sessions/pi@*"

// untar unpacks a .tar.gz into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(os.PathSeparator)) {
			t.Fatalf("archive entry %q escapes", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, os.FileMode(h.Mode)&0o777|0o200); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// toolEnv is a small, fixed environment like the one the e2e run used.
func toolEnv(t *testing.T, ws, orig string) trajectory.ToolEnv {
	t.Helper()
	home := t.TempDir()
	return trajectory.ToolEnv{Workspace: ws, OriginalCwd: orig, LogDir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TMPDIR=" + t.TempDir(),
			"GIT_CONFIG_NOSYSTEM=1", "TERM=dumb", "NO_COLOR=1"}}
}

// TestReplayRecordedSession replays every call of the real pi session in
// a fresh copy of its initial workspace: every observation must come out
// byte for byte as pi recorded it, and the session rebuilt from them must
// be the original file itself.
func TestReplayRecordedSession(t *testing.T) {
	sessions, _ := filepath.Glob(filepath.Join(e2eDirs, "*_*.jsonl"))
	if len(sessions) < 3 {
		t.Fatalf("recorded pi sessions %v: want the oldest and newest tested releases' and 0.72.1's", sessions)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, path := range sessions {
		e2eDir := filepath.Dir(path)
		t.Run(filepath.Base(e2eDir), func(t *testing.T) {
			data, tr := formattest.DecodeFile(t, New(), path)
			manifest, err := os.ReadFile(filepath.Join(e2eDir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if want := gjson.GetBytes(manifest, "repo_path").Str; tr.Cwd != want {
				t.Fatalf("Cwd = %q, want the recorded %q", tr.Cwd, want)
			}
			ws := t.TempDir()
			untar(t, filepath.Join(e2eDir, "repo.tar.gz"), ws)
			env := toolEnv(t, ws, tr.Cwd)
			env.Trajectory = tr // its records date it: the release whose tools are replayed
			sess, err := New().(trajectory.Replayer).NewToolSession(env)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			recorder := strings.TrimPrefix(filepath.Base(e2eDir), "pi@")
			sem := sess.(trajectory.SemanticsReporter).Semantics()
			if sem["release"] != map[string]string{"0.72.1": "0.73.1"}[recorder] && sem["release"] != recorder {
				t.Errorf("replayed as %v; the session was recorded by %s", sem, recorder)
			}
			fresh := map[string]trajectory.Fresh{}
			steps := tr.Steps()
			if len(steps) == 0 {
				t.Fatal("no steps")
			}
			calls := 0
			for _, a := range steps {
				for i := range a.Calls {
					c := &a.Calls[i]
					if err := Format.CheckReplayable(c); err != nil {
						t.Fatalf("step %d %s: %v", a.Step, c.Name, err)
					}
					f, err := sess.Execute(context.Background(), a.Step, c)
					if err != nil {
						t.Fatalf("step %d %s: %v", a.Step, c.Name, err)
					}
					if f.Content != c.Observation.Content || f.IsError != c.Observation.IsError {
						t.Errorf("step %d %s %s: observation differs (-recorded +replayed):\n%s", a.Step, c.Name,
							c.Arguments, cmp.Diff(c.Observation.Content, f.Content))
					}
					if f.LogPath == "" {
						t.Errorf("step %d %s: no log", a.Step, c.Name)
					}
					fresh[c.ID] = f
					calls++
				}
			}
			if calls != int(gjson.GetBytes(manifest, "tool_calls").Num) {
				t.Errorf("replayed %d calls, the manifest says %d", calls, gjson.GetBytes(manifest, "tool_calls").Int())
			}
			last := len(steps)
			var rebuilt, prefix bytes.Buffer
			if err := Format.(trajectory.Replayer).Rebuild(&rebuilt, bytes.NewReader(data), int64(len(data)), tr, last, fresh); err != nil {
				t.Fatal(err)
			}
			if err := Format.WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, last); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(prefix.String(), rebuilt.String()); d != "" {
				t.Errorf("rebuilt session differs from the recorded one (-recorded +rebuilt):\n%s", d)
			}
		})
	}
}
