package opencode

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Sessions recorded from the real CLI (opencode-ai 1.18.33) against the
// scripted fake model, with the repository they started from. Each call is
// replayed in a fresh copy of that repository and its observation must be
// byte-identical to the recorded one, once the workspace path is written
// back as the recorded directory. Calls whose recorded result depends on
// something the replay cannot reproduce are compared loosely, and say why.
type recordedSession struct {
	name    string
	export  string            // export.json or export.json.gz
	stdout  string            // the run's --format json events, "" when not kept
	repo    string            // repo.tar.gz
	cwd     string            // the directory the CLI ran in
	final   string            // final.tar.gz: the repository (without .git) the CLI left, "" when not kept
	unorder map[string]string // "step.call" (1-based) → why only the set of lines is compared
}

var recordedSessions = []recordedSession{
	{name: "e2e", export: "../../testdata/e2e/sessions/opencode@1.18.33/export.json",
		stdout: "../../testdata/e2e/sessions/opencode@1.18.33/stdout.jsonl",
		repo:   "../../testdata/e2e/sessions/opencode@1.18.33/repo.tar.gz", cwd: "/tmp/pvisor-e2e/opencode/repo"},
	{name: "tools1", export: "testdata/replay/tools1/export.json.gz", repo: "testdata/replay/tools1/repo.tar.gz",
		final: "testdata/replay/tools1/final.tar.gz", cwd: "/tmp/ocr1/repo"},
	{name: "tools2", export: "testdata/replay/tools2/export.json.gz", repo: "testdata/replay/tools2/repo.tar.gz",
		final: "testdata/replay/tools2/final.tar.gz", cwd: "/tmp/ocr3/repo"},
	{name: "patch", export: "testdata/replay/patch/export.json.gz", repo: "testdata/replay/patch/repo.tar.gz",
		final: "testdata/replay/patch/final.tar.gz", cwd: "/tmp/ocr2/repo"},
}

func readMaybeGz(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// extract unpacks a .tar.gz (dirs, files, symlinks, modes, mtimes) into dir.
func extract(t testing.TB, tarball, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(readMaybeGz(t, tarball)))
	type stamp struct {
		path string
		mt   time.Time
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
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, stamp{p, h.ModTime})
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777|0o200); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, os.FileMode(h.Mode)&0o777)
			os.Chtimes(p, h.ModTime, h.ModTime)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Chtimes(dirs[i].path, dirs[i].mt, dirs[i].mt)
	}
}

// testEnv is the tools' environment: the machine's PATH, nothing else
// of this process.
func testEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb",
		"GIT_CONFIG_NOSYSTEM=1", "USER=root"}
}

// recordedStates maps callID → the recorded tool state.
func recordedStates(export []byte) map[string]gjson.Result {
	out := map[string]gjson.Result{}
	gjson.GetBytes(export, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("parts").ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str == "tool" {
				out[p.Get("callID").Str] = p.Get("state")
			}
			return true
		})
		return true
	})
	return out
}

var savedTo = regexp.MustCompile(`(Full output saved to: |"outputPath":")[^\n"]*`)

// normalize writes the workspace back as the recorded directory and hides
// where a full output was saved (OpenCode's data dir vs the replay's logs).
func normalize(s, ws, cwd string) string {
	return savedTo.ReplaceAllString(strings.ReplaceAll(s, ws, cwd), "${1}<saved>")
}

type replayed struct {
	tr        *trajectory.Trajectory
	export    []byte
	workspace string
	fresh     map[string]trajectory.Fresh
	order     []string // call IDs in replay order
	where     map[string]string
}

func replayRecorded(t *testing.T, rs recordedSession) *replayed {
	t.Helper()
	export := readMaybeGz(t, rs.export)
	tr, err := New().Decode(bytes.NewReader(export), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Cwd != rs.cwd {
		t.Fatalf("Trajectory.Cwd = %q, want %q", tr.Cwd, rs.cwd)
	}
	root := t.TempDir()
	ws := filepath.Join(root, "repo")
	extract(t, rs.repo, ws)
	sess, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: tr.Cwd,
		Env: testEnv(root), LogDir: filepath.Join(root, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := &replayed{tr: tr, export: export, workspace: ws, fresh: map[string]trajectory.Fresh{}, where: map[string]string{}}
	for _, a := range tr.Steps() {
		for i := range a.Calls {
			c := &a.Calls[i]
			if err := New().CheckReplayable(c); err != nil {
				t.Fatalf("step %d %s: %v", a.Step, c.Name, err)
			}
			f, err := sess.Execute(context.Background(), a.Step, c)
			if err != nil {
				t.Fatalf("step %d %s %s: %v", a.Step, c.Name, c.Arguments, err)
			}
			out.fresh[c.ID] = f
			out.order = append(out.order, c.ID)
			out.where[c.ID] = strings.Join([]string{itoa(a.Step), itoa(i + 1)}, ".")
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

// TestReplayRecordedSessions replays every recorded session and requires
// each observation, its error flag and the state metadata OpenCode stored
// to be exactly the recorded ones.
func TestReplayRecordedSessions(t *testing.T) {
	if lookPath("rg", testEnv("")) == "" || lookPath("git", testEnv("")) == "" {
		t.Skip("needs rg and git on PATH, as OpenCode does")
	}
	for _, rs := range recordedSessions {
		t.Run(rs.name, func(t *testing.T) {
			t.Parallel()
			r := replayRecorded(t, rs)
			states := recordedStates(r.export)
			exact := 0
			for _, a := range r.tr.Steps() {
				for _, c := range a.Calls {
					f := r.fresh[c.ID]
					at := r.where[c.ID]
					got := normalize(f.Content, r.workspace, rs.cwd)
					want := normalize(c.Observation.Content, r.workspace, rs.cwd)
					if f.IsError != c.Observation.IsError {
						t.Errorf("%s %s %s: is_error %v, recorded %v (%q)", at, c.Name, c.Arguments, f.IsError, c.Observation.IsError, got)
					}
					if why, ok := rs.unorder[at]; ok {
						if d := cmp.Diff(sortedLines(want), sortedLines(got)); d != "" && !strings.Contains(why, "which") {
							t.Errorf("%s %s: lines differ (-recorded +replayed):\n%s", at, c.Name, d)
						}
						continue
					}
					if got != want {
						t.Errorf("%s %s %s: observation differs (-recorded +replayed):\n%s", at, c.Name, c.Arguments, cmp.Diff(want, got))
						continue
					}
					st := states[c.ID]
					native := gjson.ParseBytes(f.Native)
					if m := st.Get("metadata"); m.Exists() || native.Get("metadata").Exists() {
						gm := normalize(compactJS(native.Get("metadata")), r.workspace, rs.cwd)
						wm := normalize(compactJS(m), r.workspace, rs.cwd)
						if gm != wm {
							t.Errorf("%s %s: metadata differs (-recorded +replayed):\n%s", at, c.Name, cmp.Diff(wm, gm))
						}
					}
					if tt := st.Get("title"); tt.Exists() && normalize(native.Get("title").Str, r.workspace, rs.cwd) != tt.Str {
						t.Errorf("%s %s: title %q, recorded %q", at, c.Name, native.Get("title").Str, tt.Str)
					}
					exact++
				}
			}
			t.Logf("%d of %d observations byte-identical", exact, len(r.order))
			if rs.final != "" {
				want := filepath.Join(t.TempDir(), "final")
				extract(t, rs.final, want)
				if d := cmp.Diff(tree(t, want), tree(t, r.workspace)); d != "" {
					t.Errorf("the replay left another tree than the CLI (-cli +replay):\n%s", d)
				}
			}
		})
	}
}

// tree maps every path below root (but .git) to its content or link target.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.IsDir() && fi.Name() == ".git":
			return filepath.SkipDir
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.IsDir():
			out[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compactJS(v gjson.Result) string {
	if !v.Exists() {
		return ""
	}
	var b bytes.Buffer
	stringifyJS(&b, v, 0, 0)
	return b.String()
}

// The fresh results of a replay rebuild into exactly the recorded prefix
// (workspace written back as the recorded directory) when every replayed
// result equals the recorded one.
func TestRebuildFromReplayEqualsPrefix(t *testing.T) {
	if lookPath("rg", testEnv("")) == "" || lookPath("git", testEnv("")) == "" {
		t.Skip("needs rg and git on PATH")
	}
	rs := recordedSessions[0]
	r := replayRecorded(t, rs)
	for n := 1; n <= len(r.tr.Steps()); n++ {
		var prefix, rebuilt bytes.Buffer
		src := bytes.NewReader(r.export)
		if err := New().WritePrefix(&prefix, src, int64(len(r.export)), r.tr, n); err != nil {
			t.Fatal(err)
		}
		if err := New().(trajectory.Replayer).Rebuild(&rebuilt, src, int64(len(r.export)), r.tr, n, r.fresh); err != nil {
			t.Fatal(err)
		}
		got := normalize(rebuilt.String(), r.workspace, rs.cwd)
		if got != prefix.String() {
			t.Errorf("step %d: rebuilt export differs from the prefix:\n%s", n, cmp.Diff(prefix.String(), got))
		}
	}
	// The log of each shell call holds its full output.
	for id, f := range r.fresh {
		if f.LogPath == "" {
			continue
		}
		if _, err := os.Stat(f.LogPath); err != nil {
			t.Errorf("%s: log %s: %v", id, f.LogPath, err)
		}
	}
}
