package codex

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

var chunkRe = regexp.MustCompile(`(?m)^Chunk ID: [0-9a-f]{6}$`)

func normalize(s string) string { return Normalize(s) }

func toolEnv(t *testing.T, ws, orig string) trajectory.ToolEnv {
	t.Helper()
	return trajectory.ToolEnv{
		Workspace:   ws,
		OriginalCwd: orig,
		Env:         []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "USER=root", "SHELL=/bin/bash"},
		LogDir:      filepath.Join(t.TempDir(), "logs"),
	}
}

// replayAll re-executes every step of the rollout at path in ws and
// returns the trajectory and the fresh results by call id.
func replayAll(t *testing.T, path, ws string) (*trajectory.Trajectory, map[string]trajectory.Fresh) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Cwd == "" {
		t.Fatal("decoder left Trajectory.Cwd empty")
	}
	ts, err := NewToolSessionVersion(toolEnv(t, ws, tr.Cwd), tr.Version)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	fresh := map[string]trajectory.Fresh{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, a := range tr.Steps() {
		for i := range a.Calls {
			c := &a.Calls[i]
			f, err := ts.Execute(ctx, a.Step, c)
			if err != nil {
				t.Fatalf("step %d %s %s: %v", a.Step, c.Name, c.ID, err)
			}
			fresh[c.ID] = f
		}
	}
	return tr, fresh
}

// checkReplay asserts that every fresh result equals the recorded one up
// to the nondeterministic fields, and that Rebuild with them still decodes
// to the same steps.
func checkReplay(t *testing.T, path string, tr *trajectory.Trajectory, fresh map[string]trajectory.Fresh) {
	t.Helper()
	exact := 0
	for _, a := range tr.Steps() {
		for _, c := range a.Calls {
			f := fresh[c.ID]
			if d := cmp.Diff(normalize(c.Observation.Content), normalize(f.Content)); d != "" {
				t.Errorf("step %d %s %s: result differs (-recorded +replayed):\n%s\nargs: %s", a.Step, c.Name, c.ID, d, c.Arguments)
			}
			if f.IsError != c.Observation.IsError {
				t.Errorf("step %d %s: IsError %v, recorded %v", a.Step, c.Name, f.IsError, c.Observation.IsError)
			}
			if f.Content == c.Observation.Content {
				exact++
			} else if chunkRe.ReplaceAllString(f.Content, "") != chunkRe.ReplaceAllString(c.Observation.Content, "") {
				t.Logf("step %d %s: differs beyond the chunk id (wall time)", a.Step, c.Name)
			}
		}
	}
	t.Logf("%d of %d results byte-identical before normalisation", exact, len(fresh))
	data, _ := os.ReadFile(path)
	var out bytes.Buffer
	last := len(tr.Steps())
	if err := New().(trajectory.Replayer).Rebuild(&out, bytes.NewReader(data), int64(len(data)), tr, last, fresh); err != nil {
		t.Fatal(err)
	}
	back, err := decodeBytes(t, out.Bytes())
	if err != nil {
		t.Fatalf("rebuilt session does not decode: %v", err)
	}
	for _, a := range back.Steps() {
		for _, c := range a.Calls {
			if c.Observation.Content != fresh[c.ID].Content {
				t.Errorf("rebuilt %s holds %q, want the fresh result", c.ID, c.Observation.Content)
			}
		}
	}
}

// TestReplayLabSession replays a session recorded with the real codex
// 0.171 CLI against the scripted fake model (testdata/replay/SOURCES.md):
// exec_command exit codes, merged stderr, relative workdir, token
// truncation with and without max_output_tokens, lossy UTF-8, apply_patch
// success, every verification failure, the exec heredoc intercept, a
// missing workdir and update_plan without a plan tool.
func TestReplayLabSession(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"README.md":        "# Greeter\n\nA tiny greeter. It prints a greting.\n",
		"greeter/util.py":  "def greet(name):\n    return \"hi \" + name\n",
		".keep-dir-for-ls": "",
	})
	os.Remove(filepath.Join(ws, ".keep-dir-for-ls"))
	path := filepath.Join("testdata", "replay", "lab-0.171-rollout.jsonl")
	tr, fresh := replayAll(t, path, ws)
	checkReplay(t, path, tr, fresh)
	if _, err := os.Stat(filepath.Join(ws, "new1.txt")); err == nil {
		t.Error("a patch that failed verification created new1.txt")
	}
}

// TestReplayE2ESession replays the session the e2e helper recorded with
// the real CLI, in a fresh copy of its initial repository.
func TestReplayE2ESession(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "e2e", "sessions", "codex@0.171.0")
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Skipf("no e2e recording: %v", err)
	}
	for _, tool := range []string{"git", "rg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH; the recorded session ran it", tool)
		}
	}
	ws := t.TempDir()
	untar(t, filepath.Join(dir, gjson.GetBytes(manifest, "files.initial_repo").Str), ws)
	path := filepath.Join(dir, gjson.GetBytes(manifest, "files.session").Str)
	tr, fresh := replayAll(t, path, ws)
	if want := gjson.GetBytes(manifest, "repo_path").Str; tr.Cwd != want {
		t.Errorf("Trajectory.Cwd = %q, manifest repo_path %q", tr.Cwd, want)
	}
	checkReplay(t, path, tr, fresh)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

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
		p := filepath.Join(dir, filepath.Clean("/" + h.Name)[1:])
		if !strings.HasPrefix(p, dir) {
			t.Fatalf("archive entry %q escapes", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
					err = os.WriteFile(p, b, os.FileMode(h.Mode)&0o777)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecodeCwd: the decoder fills Trajectory.Cwd from session_meta.
func TestDecodeCwd(t *testing.T) {
	want := map[string]string{
		"agentcmd_rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl": "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2",
		"codemie_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl":  "/Users/Sample_User/repos/codemie-ai/codemie-code",
		"lab-0.171-rollout.jsonl": "/tmp/codexlab/runs/lab/repo",
	}
	for path, data := range replayable(t) {
		tr, err := decodeBytes(t, data)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Cwd == "" || !filepath.IsAbs(tr.Cwd) {
			t.Errorf("%s: Cwd = %q", filepath.Base(path), tr.Cwd)
		}
		if w, ok := want[filepath.Base(path)]; ok && tr.Cwd != w {
			t.Errorf("%s: Cwd = %q, want %q", filepath.Base(path), tr.Cwd, w)
		}
	}
}
