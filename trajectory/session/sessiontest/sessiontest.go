// Package sessiontest checks an agent's session store against a real
// recording: the golden list of fields a cwd rewrite changes, the round
// trip back to the original bytes, and a kept torn last line.
package sessiontest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory/session"
)

// To is the cwd recordings are moved to: a space, a non-ASCII letter and a
// different length, so neither escaping nor offsets can hide a bug.
const To = "/w/new place/réplica"

// Rewrite moves the recording at path from its recorded cwd to To and
// returns the changed fields, line by line, for the caller's golden file.
// It also checks B→A gives the original bytes, that a line not mentioning
// the cwd is untouched, and that a torn last line survives both ways.
func Rewrite(t *testing.T, s session.Rewriter, path string) string {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Origin(bytes.NewReader(orig))
	if err != nil || o.Cwd == "" {
		t.Fatalf("Origin = %+v, %v; want the recorded cwd", o, err)
	}
	moved := rewrite(t, s, orig, o.Cwd, To)
	back := rewrite(t, s, moved, To, o.Cwd)
	if !bytes.Equal(back, orig) {
		t.Fatalf("rewriting %s back to %s does not give the original bytes:\n%s", To, o.Cwd, cmp.Diff(string(orig), string(back)))
	}
	inLines, outLines := lines(orig), lines(moved)
	if len(inLines) != len(outLines) {
		t.Fatalf("rewrite changed the line count: %d → %d", len(inLines), len(outLines))
	}
	var report strings.Builder
	fmt.Fprintf(&report, "# %s: %s → %s\n", filepath.Base(path), o.Cwd, To)
	// One JSON document (an OpenCode export) is compared whole, JSONL
	// line by line.
	document := json.Valid(orig)
	// A name the store derives from the cwd (Kimi's workspace id) counts
	// as a mention of it.
	mentions := [][]byte{[]byte(o.Cwd)}
	if d, ok := s.(Deriver); ok {
		for _, n := range d.Derived(o.Cwd) {
			mentions = append(mentions, []byte(n))
		}
	}
	for i := range inLines {
		if !containsAny(inLines[i], mentions) && !bytes.Equal(inLines[i], outLines[i]) {
			t.Errorf("line %d does not mention the cwd but changed", i+1)
		}
		if document {
			continue
		}
		if paths := changed(t, i+1, inLines[i], outLines[i]); len(paths) > 0 {
			fmt.Fprintf(&report, "line %d: %s\n", i+1, strings.Join(paths, ", "))
		}
	}
	if document {
		fmt.Fprintf(&report, "%s\n", strings.Join(changed(t, 1, orig, moved), "\n"))
		// A document cut short cannot be rewritten field by field.
		if _, err := s.Rewrite(io.Discard, bytes.NewReader(orig[:len(orig)/2]), o.Cwd, To); err == nil {
			t.Errorf("a document cut short was rewritten without an error")
		}
		return report.String()
	}

	// A writer killed mid-line leaves a torn tail; it is kept verbatim.
	torn := append(append([]byte{}, orig...), []byte(`{"type":"x","cwd":"`+o.Cwd)...)
	out := rewrite(t, s, torn, o.Cwd, To)
	if !bytes.HasSuffix(out, []byte(`{"type":"x","cwd":"`+o.Cwd)) || !bytes.Equal(out[:len(moved)], moved) {
		t.Errorf("the torn last line was not kept verbatim")
	}
	return report.String()
}

// Deriver is a Rewriter that also rewrites names it derives from a cwd.
type Deriver interface {
	Derived(cwd string) []string
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

func rewrite(t *testing.T, s session.Rewriter, in []byte, from, to string) []byte {
	t.Helper()
	var out bytes.Buffer
	n, err := s.Rewrite(&out, bytes.NewReader(in), from, to)
	if err != nil {
		t.Fatalf("Rewrite(%s → %s): %v", from, to, err)
	}
	if n == 0 {
		t.Fatalf("Rewrite(%s → %s) replaced nothing", from, to)
	}
	return out.Bytes()
}

func lines(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }

// changed lists the JSON paths whose values differ between two lines.
func changed(t *testing.T, n int, a, b []byte) []string {
	if bytes.Equal(a, b) {
		return nil
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		t.Errorf("line %d changed but is not JSON on both sides", n)
		return nil
	}
	var out []string
	diffPaths(&out, "", va, vb)
	sort.Strings(out)
	return out
}

func diffPaths(out *[]string, at string, a, b any) {
	switch x := a.(type) {
	case map[string]any:
		y, _ := b.(map[string]any)
		for k, v := range x {
			diffPaths(out, join(at, k), v, y[k])
		}
	case []any:
		y, _ := b.([]any)
		for i, v := range x {
			var w any
			if i < len(y) {
				w = y[i]
			}
			diffPaths(out, join(at, fmt.Sprint(i)), v, w)
		}
	default:
		if a != b {
			*out = append(*out, at)
		}
	}
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// Recorded lays the e2e recording in dir (testdata/e2e/sessions/<agent>@<v>)
// out in a fresh HOME at the path the real CLI wrote it to, and checks
// that Locate finds it there by id and Origin reads its cwd and version.
func Recorded(t *testing.T, s session.Store, dir string) (home string, loc *session.Located) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		SessionID  string `json:"session_id"`
		NativePath string `json:"native_path"`
		CLIVersion string `json:"cli_version"`
		RepoPath   string `json:"repo_path"`
		Files      struct {
			Session string `json:"session"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, m.Files.Session))
	if err != nil {
		t.Fatal(err)
	}
	home = t.TempDir()
	WriteFile(t, filepath.Join(home, m.NativePath), data)
	root, err := s.Root(home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	loc, err = s.Locate(root, m.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Join(root, loc.Main); got != filepath.Join(home, m.NativePath) {
		t.Errorf("Locate = %s, want %s", got, filepath.Join(home, m.NativePath))
	}
	o, err := s.Origin(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if o.Cwd != m.RepoPath {
		t.Errorf("origin cwd = %q, want the recording's %q", o.Cwd, m.RepoPath)
	}
	if o.CLIVersion != "" && !strings.Contains(m.CLIVersion, o.CLIVersion) {
		t.Errorf("recorded CLI version %q is not the one that wrote it (%q)", o.CLIVersion, m.CLIVersion)
	}
	return home, loc
}

// Locate checks the refusals every store shares on a fake root: place
// returns where the CLI would keep session id (two places for variant 0
// and 1, say two project directories).
func Locate(t *testing.T, s session.Store, place func(id string, variant int) string) {
	t.Helper()
	root := t.TempDir()
	const id = "01a22998-8d3b-75d5-8d8d-f6601805e7d0"
	WriteFile(t, filepath.Join(root, place(id, 0)), []byte("{}\n"))
	WriteFile(t, filepath.Join(root, place("x-"+id, 0)), []byte("{}\n"))
	loc, err := s.Locate(root, id)
	if err != nil || loc.Main != place(id, 0) {
		t.Fatalf("Locate = %+v, %v; want %s (and not the session whose id ends in it)", loc, err, place(id, 0))
	}
	for _, bad := range []string{"", ".", "..", "../" + id, "a/b", "*", id[:8] + "*", "a?", "[ab]", `a\b`, "a b", strings.Repeat("a", 129)} {
		var be *session.BadIDError
		if _, err := s.Locate(root, bad); !errors.As(err, &be) {
			t.Errorf("Locate(%q) = %v, want a BadIDError", bad, err)
		}
	}
	var nf *session.NotFoundError
	if _, err := s.Locate(root, "nope"); !errors.As(err, &nf) || !strings.Contains(err.Error(), root) {
		t.Errorf("Locate(unknown) = %v, want a NotFoundError naming %s", err, root)
	}
	WriteFile(t, filepath.Join(root, place(id, 1)), []byte("{}\n"))
	var amb *session.AmbiguousError
	_, err = s.Locate(root, id)
	if !errors.As(err, &amb) || len(amb.Paths) != 2 ||
		!strings.Contains(err.Error(), place(id, 0)) || !strings.Contains(err.Error(), place(id, 1)) {
		t.Errorf("Locate(id in two places) = %v, want an AmbiguousError listing both", err)
	}
}

// WriteFile writes data to path, making its directories.
func WriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Recordings runs Rewrite and Recorded on each e2e recording (paths of
// session files in testdata/e2e/sessions/<agent>@<version>/), handing the
// rewrite report to golden. dirName, when set, is the agent's directory
// name for a cwd, checked against where the real CLI put the file.
func Recordings(t *testing.T, s session.Store, paths []string, dirName func(cwd string) string, golden func(t *testing.T, name, got string)) {
	for _, path := range paths {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			golden(t, name, Rewrite(t, s, path))
			_, loc := Recorded(t, s, filepath.Dir(path))
			if dirName == nil {
				return
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			o, err := s.Origin(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := filepath.Base(filepath.Dir(loc.Main)), dirName(o.Cwd); got != want {
				t.Errorf("the CLI keeps the session in %s, the encoder says %s", got, want)
			}
		})
	}
}
