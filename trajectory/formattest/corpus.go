package formattest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

// Corpus is a format's sample files and what its tests expect of them.
type Corpus struct {
	Format trajectory.Format
	// Globs are the patterns of the sample files, e.g.
	// "../../testdata/trajectories/pi/*.jsonl".
	Globs []string
	// Refused maps the base name of each sample the format must refuse
	// (another agent's file, an unsupported version) to the error.
	Refused map[string]Refusal
	// Columns are the optional parts of the golden summaries.
	Columns []Column
	// GoldenDir holds <base name>.golden per sample; "" is testdata/golden.
	GoldenDir string
	// Bad are hand-written inputs the format must refuse. They also seed
	// the fuzz target, as the edges of what decodes.
	Bad []BadInput
	// Unit, when not "", is the unit of every locator of every decode.
	Unit string
}

// BadInput is a hand-written input a format must refuse.
type BadInput struct {
	Name string
	Src  string
	Want Refusal
}

// Refuse is the BadInput src, which must be refused with want.
func Refuse(name, src string, want Refusal) BadInput { return BadInput{name, src, want} }

// Files returns the sample files.
func (c Corpus) Files(t testing.TB) []string {
	t.Helper()
	return Glob(t, c.Globs...)
}

// TestGolden decodes every sample in a subtest named after it: a refused
// one must fail with its Refusal; any other must match its golden Summary,
// satisfy Invariants and InFile, locate in c.Unit, and decode lean
// (Options.SkipObservationContent) to the same shape with no observation
// content.
func (c Corpus) TestGolden(t *testing.T) {
	dir := c.GoldenDir
	if dir == "" {
		dir = filepath.Join("testdata", "golden")
	}
	for _, path := range c.Files(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data := read(t, path)
			tr, err := c.Format.Decode(bytes.NewReader(data), trajectory.Options{})
			if want, ok := c.Refused[name]; ok {
				CheckError(t, err, want)
				CheckDecodePrefix(t, c.Format, data, trajectory.Options{}, 1)
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := Summary(tr, c.Columns...)
			Golden(t, filepath.Join(dir, name+".golden"), got)
			CheckInvariants(t, tr)
			if err := InFile(tr, len(data)); err != nil {
				t.Fatal(err)
			}
			checkUnit(t, tr, c.Unit)
			checkLean(t, c.Format, data, tr, c.Columns)
			CheckDecodePrefix(t, c.Format, data, trajectory.Options{}, SomeSteps(tr)...)
			CheckDecodePrefix(t, c.Format, data, trajectory.Options{SkipObservationContent: true}, SomeSteps(tr)...)
		})
	}
}

// checkLean decodes data again without observation content: the summary
// must not change but for the content sizes.
func checkLean(t testing.TB, f trajectory.Format, data []byte, full *trajectory.Trajectory, cols []Column) {
	t.Helper()
	lean, err := f.Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
	if err != nil {
		t.Fatalf("lean decode: %v", err)
	}
	shape := slices.DeleteFunc(slices.Clone(cols), func(c Column) bool { return c == Sizes })
	if d := cmp.Diff(Summary(full, shape...), Summary(lean, shape...)); d != "" {
		t.Errorf("lean decode differs in shape:\n%s", d)
	}
	for _, a := range lean.Actions {
		for _, c := range a.Calls {
			if o := c.Observation; o != nil && o.Content != "" {
				t.Fatalf("call %s: a lean decode kept %d bytes of content", c.ID, len(o.Content))
			}
		}
	}
}

// ForEach runs fn in a subtest named after each sample that is not
// refused, with the file's bytes and their decode.
func (c Corpus) ForEach(t *testing.T, fn func(t *testing.T, name string, data []byte, tr *trajectory.Trajectory)) {
	for _, path := range c.Files(t) {
		name := filepath.Base(path)
		if _, ok := c.Refused[name]; ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, tr := DecodeFile(t, c.Format, path)
			fn(t, name, data, tr)
		})
	}
}

// TestBadInputs requires each of c.Bad to be refused, in a subtest named
// after it.
func (c Corpus) TestBadInputs(t *testing.T) {
	for _, b := range c.Bad {
		t.Run(b.Name, func(t *testing.T) {
			CheckRefused(t, c.Format, []byte(b.Src), b.Want)
		})
	}
}

// Fuzz runs CheckDecode with mayRefuse, and requires locators in c.Unit,
// on inputs grown from c.Bad and the samples of at most maxSeed bytes:
// small seeds let the mutator reach structure rather than churn through
// content. Seeds added before the call are kept.
func (c Corpus) Fuzz(f *testing.F, maxSeed int, mayRefuse func(tr *trajectory.Trajectory, n int) bool) {
	for _, b := range c.Bad {
		f.Add([]byte(b.Src))
	}
	for _, path := range c.Files(f) {
		if data := read(f, path); len(data) <= maxSeed {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if tr := CheckDecode(t, c.Format, data, mayRefuse); tr != nil {
			checkUnit(t, tr, c.Unit)
		}
	})
}

// TestDetect runs CheckDetect over the agent folders under root, where a
// file of the format's own folder that is not a sample (a subagent's
// .meta.json beside its transcript) must not be claimed, and requires
// every sample, the package's own included, to be claimed.
func (c Corpus) TestDetect(t testing.TB, root string) {
	t.Helper()
	files := c.Files(t)
	samples := map[string]bool{}
	for _, path := range files {
		samples[abs(t, path)] = true
	}
	checkDetect(t, c.Format, root, func(path string) bool { return samples[abs(t, path)] })
	for _, path := range files {
		if !c.Format.Detect(Head(t, path)) {
			t.Errorf("Detect(%s) = false, want true", path)
		}
	}
}

func abs(t testing.TB, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// DecodeFile reads the file at path and decodes it with f, failing the
// test when either fails.
func DecodeFile(t testing.TB, f trajectory.Format, path string) ([]byte, *trajectory.Trajectory) {
	t.Helper()
	data := read(t, path)
	tr, err := f.Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatalf("decode %s: %v", filepath.Base(path), err)
	}
	return data, tr
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
