package claude

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const e2eDir = "../../testdata/e2e/sessions/claude-code@2.1.197"

// e2eManifest is the part of the recorder's manifest.json the test needs.
type e2eManifest struct {
	CLIVersion string `json:"cli_version"`
	RepoPath   string `json:"repo_path"`
	SessionID  string `json:"session_id"`
	Files      struct {
		InitialRepo string `json:"initial_repo"`
		Session     string `json:"session"`
	} `json:"files"`
}

// TestReplayRecordedSession replays a session the real Claude Code CLI
// recorded against a scripted model, in a fresh copy of its initial
// repository, and requires every observation to come out byte for byte as
// the CLI wrote it, toolUseResult included (up to timings).
func TestReplayRecordedSession(t *testing.T) {
	var m e2eManifest
	raw, err := os.ReadFile(filepath.Join(e2eDir, "manifest.json"))
	if err != nil {
		t.Skipf("no recorded Claude Code session: %v", err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(e2eDir, m.Files.Session))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Cwd != m.RepoPath || tr.SessionID != m.SessionID {
		t.Fatalf("decoded cwd %q session %q, manifest says %q %q", tr.Cwd, tr.SessionID, m.RepoPath, m.SessionID)
	}
	ws := filepath.Join(t.TempDir(), "repo")
	untar(t, filepath.Join(e2eDir, m.Files.InitialRepo), ws)
	home := t.TempDir()
	sess, err := New().NewToolSession(trajectory.ToolEnv{
		Workspace: ws, OriginalCwd: tr.Cwd, LogDir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "GIT_CONFIG_NOSYSTEM=1", "TERM=dumb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	fresh := map[string]trajectory.Fresh{}
	steps := tr.Steps()
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	for _, a := range steps {
		for i := range a.Calls {
			c := &a.Calls[i]
			f, err := sess.Execute(context.Background(), a.Step, c)
			if err != nil {
				t.Fatalf("step %d %s %s: %v", a.Step, c.Name, c.ID, err)
			}
			fresh[c.ID] = f
			want := c.Observation
			if f.Content != want.Content || f.IsError != want.IsError {
				t.Errorf("step %d %s %s: observation differs (error %v, want %v):\n%s", a.Step, c.Name, c.ID, f.IsError, want.IsError,
					cmp.Diff(want.Content, f.Content))
			}
			if c.Name == "Bash" {
				if b, err := os.ReadFile(f.LogPath); err != nil || f.ExitCode == nil {
					t.Errorf("step %d Bash: no log or exit code: %v", a.Step, err)
				} else if !strings.Contains(f.Content, strings.TrimSpace(string(b))) {
					t.Errorf("step %d Bash: log %q does not hold the output", a.Step, b)
				}
			}
		}
	}
	// The rebuilt session: every fresh observation equals the recorded
	// one, so only the toolUseResults may differ, and only in timings.
	var out bytes.Buffer
	if err := New().Rebuild(&out, bytes.NewReader(data), int64(len(data)), tr, len(steps), fresh); err != nil {
		t.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, len(steps)); err != nil {
		t.Fatal(err)
	}
	if got, want := timingless(out.String()), timingless(prefix.String()); got != want {
		t.Errorf("rebuilt session differs from the recorded prefix beyond timings:\n%s", cmp.Diff(want, got))
	}
	back, err := New().Decode(bytes.NewReader(out.Bytes()), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(observations(prefixTrajectory(t, prefix.Bytes())), observations(back)); diff != "" {
		t.Errorf("rebuilt session decodes differently:\n%s", diff)
	}
}

var durations = regexp.MustCompile(`"durationMs":[0-9]+`)

func timingless(s string) string { return durations.ReplaceAllString(s, `"durationMs":0`) }

func prefixTrajectory(t *testing.T, b []byte) *trajectory.Trajectory {
	t.Helper()
	tr, err := New().Decode(bytes.NewReader(b), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// observations lists what the model saw of each step, without byte offsets.
func observations(tr *trajectory.Trajectory) []string {
	var out []string
	for _, a := range tr.Steps() {
		out = append(out, fmt.Sprintf("step %d text=%q", a.Step, a.Text))
		for _, c := range a.Calls {
			out = append(out, fmt.Sprintf("  %s %s error=%v %q", c.ID, c.Name, c.Observation.IsError, c.Observation.Content))
		}
	}
	return out
}

// untar extracts a .tar.gz with its modes and modification times.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	fh, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	type stamp struct {
		path string
		at   time.Time
	}
	var dirs []stamp
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, stamp{p, h.ModTime})
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, h.ModTime, h.ModTime); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].at, dirs[i].at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestReplayCorpusSession replays real sessions from the corpus whose steps
// depend only on files the session itself creates, from an empty
// workspace: every observation must come out as the CLI recorded it (a
// 2.0.64 session: "     1→" numbering, the malware reminder, Edit's cat -n
// snippet, an empty Bash result).
func TestReplayCorpusSession(t *testing.T) {
	for _, name := range []string{"codemie_-tmp-private_4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"} {
		t.Run(name, func(t *testing.T) {
			_, tr := formattest.DecodeFile(t, New(), filepath.Join(dataDir, name))
			sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: t.TempDir(), OriginalCwd: tr.Cwd,
				Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			n := 0
			for _, a := range tr.Steps() {
				for i := range a.Calls {
					c := &a.Calls[i]
					f, err := sess.Execute(context.Background(), a.Step, c)
					if err != nil {
						t.Fatalf("step %d %s: %v", a.Step, c.Name, err)
					}
					n++
					if f.Content != c.Observation.Content || f.IsError != c.Observation.IsError {
						t.Errorf("step %d %s: error=%v want %v:\n%s", a.Step, c.Name, f.IsError, c.Observation.IsError,
							cmp.Diff(c.Observation.Content, f.Content))
					}
				}
			}
			if n < 6 {
				t.Fatalf("replayed only %d calls", n)
			}
		})
	}
}
