// Package formattest is the test harness the trajectory/<agent> decoders
// share: golden summaries of the sample files (rewritten with -update),
// expected refusals, the model's invariants, prefix round trips and the body
// of a decoder's fuzz target. Import it from _test.go files only: it
// registers the -update flag.
package formattest

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// HeadSize is how much of a file Detect is shown, as the agents package
// shows it (formattest cannot import agents: agents imports every format).
const HeadSize = 64 << 10

// Refusal is the error a decode or prefix must fail with.
type Refusal struct {
	Kind trajectory.Kind
	Line int    // 0 when the error is about no line
	Msg  string // a part of the error's text
}

// Malformed is a Refusal of kind trajectory.Malformed.
func Malformed(line int, msg string) Refusal { return Refusal{trajectory.Malformed, line, msg} }

// Unsupported is a Refusal of kind trajectory.Unsupported.
func Unsupported(line int, msg string) Refusal { return Refusal{trajectory.Unsupported, line, msg} }

// CheckError requires err to be the *trajectory.Error want describes.
func CheckError(t testing.TB, err error, want Refusal) {
	t.Helper()
	var e *trajectory.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *trajectory.Error containing %q, got %v", want.Msg, err)
	}
	if e.Kind != want.Kind || e.Line != want.Line || !strings.Contains(e.Error(), want.Msg) {
		t.Errorf("got kind=%d line=%d %q; want kind=%d line=%d containing %q",
			e.Kind, e.Line, e.Error(), want.Kind, want.Line, want.Msg)
	}
}

// CheckRefused requires f to refuse src with want.
func CheckRefused(t testing.TB, f trajectory.Format, src []byte, want Refusal) {
	t.Helper()
	tr, err := f.Decode(bytes.NewReader(src), trajectory.Options{})
	if err == nil {
		t.Fatalf("decoded %q into %d actions", src, len(tr.Actions))
	}
	CheckError(t, err, want)
	CheckDecodePrefix(t, f, src, trajectory.Options{}, 1, 2)
}

// CheckReplayable requires f.CheckReplayable to accept a call of tool name
// with the JSON arguments args when want is "", and otherwise to refuse it
// with an error containing want.
func CheckReplayable(t testing.TB, f trajectory.Format, name, args, want string) {
	t.Helper()
	err := f.CheckReplayable(&trajectory.ToolCall{ID: "c", Name: name, Arguments: []byte(args)})
	switch {
	case want == "" && err != nil:
		t.Errorf("%s %s: %v", name, args, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s %s: got %v, want error containing %q", name, args, err, want)
	}
}

// Glob returns the files matching the patterns, in pattern order. A
// pattern that matches nothing fails the test: a moved testdata folder
// must not quietly drop its samples from every corpus test.
func Glob(t testing.TB, patterns ...string) []string {
	t.Helper()
	var files []string
	for _, pat := range patterns {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			t.Fatalf("no files match %s", pat)
		}
		files = append(files, m...)
	}
	return files
}

// Golden compares got with the file at path; with -update it writes got
// there first.
func Golden(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("summary differs from %s (-want +got):\n%s", path, d)
	}
}

// Head returns the first HeadSize bytes of the file at path, what Detect
// sees of it.
func Head(t testing.TB, path string) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	head, err := io.ReadAll(io.LimitReader(fh, HeadSize))
	if err != nil {
		t.Fatal(err)
	}
	return head
}

// CheckDetect shows f the head of every sample file under root, which holds
// one folder per agent named as Format.Agent names it, and a set of
// hand-written heads of every format: f must claim those of its own agent
// and no others.
func CheckDetect(t testing.TB, f trajectory.Format, root string) {
	t.Helper()
	checkDetect(t, f, root, func(string) bool { return true })
}

// checkDetect is CheckDetect where, of the files in f's own folder, only
// those sample says are samples must be claimed; the others must not be.
func checkDetect(t testing.TB, f trajectory.Format, root string, sample func(path string) bool) {
	t.Helper()
	checkHeads(t, f)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, d.Name(), "*.json*"))
		if err != nil {
			t.Fatal(err)
		}
		// SWE-agent's trajectories end in .traj.
		traj, _ := filepath.Glob(filepath.Join(root, d.Name(), "*.traj"))
		files = append(files, traj...)
		for _, path := range files {
			mine := d.Name() == f.Agent() && sample(path)
			if mine {
				own++
			}
			if got := f.Detect(Head(t, path)); got != mine {
				t.Errorf("Detect(%s/%s) = %v, want %v", d.Name(), filepath.Base(path), got, mine)
			}
		}
	}
	if own == 0 {
		t.Fatalf("no %s files in %s", f.Agent(), filepath.Join(root, f.Agent()))
	}
}
