package replay

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// recordedSessions are native sessions the real CLIs wrote, one per
// agent@release directory (see testdata/e2e/README.md); each comes with the
// repository it started from. Agents whose format pvisor decodes and
// prepares but does not re-run yet (no trajectory.Replayer) are left out.
var recordedSessions = func() []struct{ agent, dir string } {
	dirs, _ := filepath.Glob("../testdata/e2e/sessions/*@*")
	var out []struct{ agent, dir string }
	for _, d := range dirs {
		agent, _, _ := strings.Cut(filepath.Base(d), "@")
		if f, ok := lookupFormat(agent); ok {
			if _, replays := f.(trajectory.Replayer); !replays {
				continue
			}
		}
		out = append(out, struct{ agent, dir string }{agent, d})
	}
	return out
}()

func sessionFile(t *testing.T, dir string) string {
	t.Helper()
	var m struct {
		Files struct{ Session string } `json:"files"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Files.Session == "" {
		t.Fatalf("manifest %s: no files.session (%v)", dir, err)
	}
	return filepath.Join(dir, m.Files.Session)
}

// untar unpacks repo.tar.gz, the repository as it was before the run.
func untar(t *testing.T, archive, dst string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o755)
			out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(out, tr)
			out.Close()
			os.Chtimes(p, h.ModTime, h.ModTime)
		}
	}
}

func stepsOf(t *testing.T, agent, path string) int {
	f, _ := lookupFormat(agent)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tr, err := f.Decode(fh, trajectory.Options{SkipObservationContent: true})
	if err != nil {
		t.Fatal(err)
	}
	return len(tr.Steps())
}

func readComparisons(t *testing.T, out string) []CallComparison {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "observation-comparison.json"))
	if err != nil {
		t.Fatal(err)
	}
	var comps []CallComparison
	if err := json.Unmarshal(data, &comps); err != nil {
		t.Fatal(err)
	}
	return comps
}

func equalAfterNormalizing(c CallComparison) bool {
	return c.Exact || (c.NormalizedExact != nil && *c.NormalizedExact)
}

// Every boundary of every recorded session replays in a fresh copy of its
// repository with every observation reproduced (exactly, or exactly but
// for run-to-run fields the format declares), and the rebuilt session
// differs from the recorded prefix only in the records of calls whose
// observation changed.
func TestReplayRecordedSessions(t *testing.T) {
	for _, rs := range recordedSessions {
		t.Run(rs.agent, func(t *testing.T) {
			session := sessionFile(t, rs.dir)
			n := stepsOf(t, rs.agent, session)
			if n < 4 {
				t.Fatalf("recorded session has %d steps, expected the scripted task's 5", n)
			}
			for step := 1; step <= n; step++ {
				dir := t.TempDir()
				ws := filepath.Join(dir, "ws")
				untar(t, filepath.Join(rs.dir, "repo.tar.gz"), ws)
				res := Run(context.Background(), &Request{Agent: rs.agent, Trajectory: session, AfterStep: step, Mode: ReplayOnly,
					Workspace: ws, RunID: "r", StateRoot: dir + "/state", OutputRoot: dir + "/out"})
				if res.Failure != nil {
					t.Fatalf("after-step %d: %+v", step, res.Failure)
				}
				out := filepath.Join(dir, "out", "r")
				comps := readComparisons(t, out)
				changed := 0
				for _, c := range comps {
					if !equalAfterNormalizing(c) && !tieOrderOnly(t, rs.agent, c) {
						t.Errorf("after-step %d: step %d %s (%s) differs:\n%s", step, c.Step, c.Tool, c.CallID, c.Diff)
					}
					if !c.Exact {
						changed++
					}
				}
				prefix := readNative(t, out, RolePreparedPrefix)
				// Structured fields (file paths in metadata) name the
				// workspace the replay ran in; map it back first.
				rebuilt := []byte(strings.ReplaceAll(string(readNative(t, out, RoleReconstructed)), ws, recordedCwd(t, rs.agent, session)))
				pl, rl := lines(prefix), lines(rebuilt)
				if len(pl) != len(rl) {
					t.Fatalf("after-step %d: rebuilt session has %d lines, prefix %d", step, len(rl), len(pl))
				}
				differing := 0
				for i := range pl {
					// Measured wall times (Claude Code's toolUseResult
					// durationMs) differ from run to run, like Codex's.
					if maskDuration(pl[i]) != maskDuration(rl[i]) {
						differing++
					}
				}
				if differing > changed {
					t.Errorf("after-step %d: %d records differ but only %d observations changed", step, differing, changed)
				}
			}
		})
	}
}

// The same replay in a workspace changed beforehand shows exactly the calls
// that read the changed file as different, with a diff naming the change.
func TestReplayDetectsChangedWorkspace(t *testing.T) {
	for _, rs := range recordedSessions {
		t.Run(rs.agent, func(t *testing.T) {
			session := sessionFile(t, rs.dir)
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			untar(t, filepath.Join(rs.dir, "repo.tar.gz"), ws)
			f, _ := os.OpenFile(filepath.Join(ws, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("A line added before the replay.\n")
			f.Close()
			res := Run(context.Background(), &Request{Agent: rs.agent, Trajectory: session, AfterStep: 2, Mode: ReplayOnly,
				Workspace: ws, RunID: "r", StateRoot: dir + "/state", OutputRoot: dir + "/out"})
			if res.Failure != nil {
				t.Fatalf("%+v", res.Failure)
			}
			var differing []CallComparison
			for _, c := range readComparisons(t, filepath.Join(dir, "out", "r")) {
				if !equalAfterNormalizing(c) && !tieOrderOnly(t, rs.agent, c) {
					differing = append(differing, c)
				}
			}
			// Step 2 reads README.md next to a grep for "def " in *.py.
			if len(differing) != 1 || differing[0].Step != 2 || !addedLine.MatchString(differing[0].Diff) {
				t.Fatalf("differing calls: %+v", differing)
			}
		})
	}
}

// tieOrderOnly accepts a Glob result that lists the same paths in another
// order. The recorded repo.tar.gz gives every file the same mtime, so the
// agent's mtime sort falls back to directory order, which differs between
// file systems (two recordings of the same run disagree on it too).
func tieOrderOnly(t *testing.T, agent string, c CallComparison) bool {
	if c.Tool != "Glob" {
		return false
	}
	// A run-to-run field the format masks (a wall-time header) is no
	// difference either.
	norm := func(s string) string { return s }
	if f, ok := lookupFormat(agent); ok {
		if n, ok := f.(trajectory.Normalizer); ok {
			norm = n.NormalizeObservation
		}
	}
	var minus, plus []string
	for _, l := range strings.Split(c.Diff, "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			minus = append(minus, norm(l[1:]))
		case strings.HasPrefix(l, "+"):
			plus = append(plus, norm(l[1:]))
		}
	}
	slices.Sort(minus)
	slices.Sort(plus)
	if slices.Equal(minus, plus) {
		t.Logf("step %d Glob: same paths in another order (equal mtimes)", c.Step)
		return true
	}
	return false
}

var addedLine = regexp.MustCompile(`(?m)^\+.*A line added before the replay\.$`)

func recordedCwd(t *testing.T, agent, path string) string {
	f, _ := lookupFormat(agent)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tr, err := f.Decode(fh, trajectory.Options{SkipObservationContent: true})
	if err != nil || tr.Cwd == "" {
		t.Fatalf("%s: no recorded cwd (%v)", path, err)
	}
	return tr.Cwd
}

// readNative reads the native file the run's result lists under role.
func readNative(t *testing.T, out, role string) []byte {
	t.Helper()
	var res result.Result
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Artifacts {
		if a.Role == role {
			if data, err = os.ReadFile(a.Path); err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
	t.Fatalf("no %s artifact in %s", role, data)
	return nil
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

var durationMs = regexp.MustCompile(`"durationMs":\d+`)

func maskDuration(line string) string { return durationMs.ReplaceAllString(line, `"durationMs":0`) }
