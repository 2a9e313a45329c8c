package formattest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

func decodeToy(t *testing.T, f toy, src string) *trajectory.Trajectory {
	t.Helper()
	tr, err := f.Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestSummary(t *testing.T) {
	tr := decodeToy(t, toy{}, toySession)
	tr.Version, tr.SessionID = "1.0", "s1"
	tr.Actions[1].Reasoning = "hm"
	base := `agent=toy version="1.0" session="s1" format=lines lines=9 actions=6 steps=3
#1 step=0 complete=false line 1-1 text=5 calls=[]
#2 step=1 complete=true line 2-3 text=0 calls=[run(c1)@2->3]
#3 step=2 complete=true line 4-5 text=0 calls=[run(c2)@4->5!]
#4 step=0 complete=false line 6-6 text=8 calls=[]
#5 step=3 complete=true line 7-8 text=0 calls=[read(c3)@7->8]
#6 step=0 complete=false line 9-9 text=0 calls=[run(c4)@9->none]
`
	if d := cmp.Diff(base, Summary(tr)); d != "" {
		t.Errorf("no columns (-want +got):\n%s", d)
	}
	tr.TornTail = &trajectory.TornTail{Line: 10, Offset: 84, Bytes: 7}
	all := `agent=toy version="1.0" session="s1" format=lines lines=9 torn=line 10 (7 bytes at 84) actions=6 steps=3
#1 step=0 complete=false line 1-1 bytes=0-10 text=5 reasoning=0 calls=[]
#2 step=1 complete=true line 2-3 bytes=10-32 text=0 reasoning=2 calls=[run(c1)@2[args=2]->3[content=2]]
#3 step=2 complete=true line 4-5 bytes=32-62 text=0 reasoning=0 calls=[run(c2)@4[args=2]->5[content=10]!]
#4 step=0 complete=false line 6-6 bytes=62-75 text=8 reasoning=0 calls=[]
#5 step=3 complete=true line 7-8 bytes=75-100 text=0 reasoning=0 calls=[read(c3)@7[args=2]->8[content=4]]
#6 step=0 complete=false line 9-9 bytes=100-112 text=0 reasoning=0 calls=[run(c4)@9[args=2]->none]
`
	if d := cmp.Diff(all, Summary(tr, Sizes, Reasoning, Torn, Bytes)); d != "" {
		t.Errorf("all columns (-want +got):\n%s", d)
	}
	tr.TornTail = nil
	if got := Summary(tr, Torn); !strings.HasPrefix(got, `agent=toy version="1.0" session="s1" format=lines lines=9 torn=none actions=6`) {
		t.Errorf("no torn tail: %.90s", got)
	}
	// A call over several lines, and a call and result located by part.
	tr.Actions[1].Calls[0].Locator.Last = 3
	tr.Actions[4].Locator = trajectory.Locator{Unit: "message", First: 4, Last: 4}
	tr.Actions[4].Calls[0].Locator = trajectory.Locator{Unit: "part", First: 1, Last: 1}
	tr.Actions[4].Calls[0].Observation.Locator = trajectory.Locator{Unit: "part", First: 2, Last: 3}
	got := strings.Split(Summary(tr), "\n")
	want := []string{
		"#2 step=1 complete=true line 2-3 text=0 calls=[run(c1)@2-3->3]",
		"#5 step=3 complete=true message 4-4 text=0 calls=[read(c3)@part 1->part 2-3]",
	}
	if d := cmp.Diff(want, []string{got[2], got[5]}); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
}

// mutation breaks a decode of toySession in one way; want is the error it
// must cause, "" for none.
type mutation struct {
	name   string
	mutate func(tr *trajectory.Trajectory)
	want   string
}

// checkMutations requires check of each mutated decode to fail as want.
func checkMutations(t *testing.T, tests []mutation, check func(tr *trajectory.Trajectory) error) {
	t.Helper()
	for _, tt := range tests {
		tr := decodeToy(t, toy{}, toySession)
		tt.mutate(tr)
		err := check(tr)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestInvariants(t *testing.T) {
	tests := []mutation{
		{"intact", func(*trajectory.Trajectory) {}, ""},
		{"complete without step", func(tr *trajectory.Trajectory) { tr.Actions[1].Step = 0 }, "action 1 is complete but has no step"},
		{"steps out of order", func(tr *trajectory.Trajectory) { tr.Actions[1].Step, tr.Actions[2].Step = 2, 1 }, "action 1 has step 2, want 1"},
		{"step without result", func(tr *trajectory.Trajectory) { tr.Actions[2].Calls[0].Observation = nil }, "step 2 call c2 has no observation"},
		{"result outside the span", func(tr *trajectory.Trajectory) { tr.Actions[2].Calls[0].Observation.Locator.Last = 6 },
			"step 2: action locator lines 4-5 does not cover call c2"},
		{"call before the span", func(tr *trajectory.Trajectory) { tr.Actions[4].Calls[0].Locator.First = 6 },
			"does not cover call c3"},
		{"bytes outside the span", func(tr *trajectory.Trajectory) { tr.Actions[4].Calls[0].Observation.Locator.EndByte = 101 },
			"does not cover call c3"},
		{"span backwards", func(tr *trajectory.Trajectory) { tr.Actions[3].Locator.First = 7 }, "action 3: locator"},
		// An export locates a call by its part within the action's message:
		// the indices of different units do not compare.
		{"call in a finer unit", func(tr *trajectory.Trajectory) {
			a := &tr.Actions[2]
			a.Locator = trajectory.Locator{Unit: "message", First: 2, Last: 2}
			a.Calls[0].Locator = trajectory.Locator{Unit: "part", First: 7, Last: 7}
			a.Calls[0].Observation.Locator = trajectory.Locator{Unit: "part", First: 8, Last: 8}
		}, ""},
	}
	checkMutations(t, tests, func(tr *trajectory.Trajectory) error {
		err := Invariants(tr)
		if err != nil {
			expectFailure(t, err.Error(), func(t testing.TB) { CheckInvariants(t, tr) })
		}
		return err
	})
}

func TestInFile(t *testing.T) {
	checkMutations(t, []mutation{
		{"intact", func(*trajectory.Trajectory) {}, ""},
		{"past the end", func(tr *trajectory.Trajectory) { tr.Actions[5].Locator.EndByte = 113 }, "action 5: locator"},
		{"before the start", func(tr *trajectory.Trajectory) { tr.Actions[0].Locator.StartByte = -1 }, "action 0: locator"},
		{"call span backwards", func(tr *trajectory.Trajectory) { tr.Actions[1].Calls[0].Locator.Last = 1 }, "call c1: locator"},
		{"result past the end", func(tr *trajectory.Trajectory) { tr.Actions[4].Calls[0].Observation.Locator.EndByte = 200 },
			"result of call c3: locator"},
		{"line 0", func(tr *trajectory.Trajectory) { tr.Actions[0].Locator.First = 0 }, "names no line"},
		{"line without bytes", func(tr *trajectory.Trajectory) { tr.Actions[3].Locator.EndByte = tr.Actions[3].Locator.StartByte }, "names no line"},
		{"document without bytes", func(tr *trajectory.Trajectory) {
			tr.Actions[3].Locator = trajectory.Locator{Unit: "message", First: 0, Last: 0}
		}, ""},
	}, func(tr *trajectory.Trajectory) error { return InFile(tr, len(toySession)) })
}

func TestCheckUnit(t *testing.T) {
	tr := decodeToy(t, toy{}, toySession)
	expectFailure(t, "", func(t testing.TB) { checkUnit(t, tr, "line") })
	expectFailure(t, "", func(t testing.TB) { checkUnit(t, tr, "") })
	expectFailure(t, "is not in events", func(t testing.TB) { checkUnit(t, tr, "event") })
	tr.Actions[4].Calls[0].Observation.Locator.Unit = "part"
	expectFailure(t, "result of call c3: locator", func(t testing.TB) { checkUnit(t, tr, "line") })
}

func TestCheckError(t *testing.T) {
	err := trajectory.Errorf(3, "the thing is broken")
	expectFailure(t, "", func(t testing.TB) { CheckError(t, err, Malformed(3, "thing is broken")) })
	expectFailure(t, "want kind=1", func(t testing.TB) { CheckError(t, err, Unsupported(3, "thing is broken")) })
	expectFailure(t, "want kind=0 line=4", func(t testing.TB) { CheckError(t, err, Malformed(4, "thing is broken")) })
	expectFailure(t, `containing "other"`, func(t testing.TB) { CheckError(t, err, Malformed(3, "other")) })
	expectFailure(t, "got <nil>", func(t testing.TB) { CheckError(t, nil, Malformed(3, "x")) })
	expectFailure(t, "want *trajectory.Error", func(t testing.TB) { CheckError(t, os.ErrNotExist, Malformed(0, "x")) })
}

func TestCheckRefused(t *testing.T) {
	expectFailure(t, "", func(t testing.TB) {
		CheckRefused(t, toy{}, []byte("say\nbogus\n"), Malformed(2, `unknown record "bogus"`))
	})
	expectFailure(t, "decoded", func(t testing.TB) { CheckRefused(t, toy{}, []byte(toySession), Malformed(2, "x")) })
	expectFailure(t, "line=2", func(t testing.TB) { CheckRefused(t, toy{}, []byte("say\nbogus\n"), Malformed(1, "unknown")) })
}

func TestCheckReplayable(t *testing.T) {
	expectFailure(t, "", func(t testing.TB) { CheckReplayable(t, toy{}, "run", `{}`, "") })
	expectFailure(t, "", func(t testing.TB) { CheckReplayable(t, toy{}, "read", `{}`, "only run") })
	expectFailure(t, "toy runs only run", func(t testing.TB) { CheckReplayable(t, toy{}, "read", `{}`, "") })
	expectFailure(t, `want error containing "nope"`, func(t testing.TB) { CheckReplayable(t, toy{}, "run", `{}`, "nope") })
	expectFailure(t, `want error containing "nope"`, func(t testing.TB) { CheckReplayable(t, toy{}, "read", `{}`, "nope") })
}

func TestCheckPrefixRoundTrip(t *testing.T) {
	data := []byte(toySession)
	full := decodeToy(t, toy{}, toySession)
	var seen []int
	expectFailure(t, "", func(t testing.TB) {
		CheckPrefixRoundTrip(t, toy{}, data, full, func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory) {
			seen = append(seen, n)
			if !bytes.HasPrefix(data, cut) {
				t.Errorf("cut %d is not a byte prefix", n)
			}
		})
	})
	if d := cmp.Diff([]int{1, 2, 3}, seen); d != "" {
		t.Errorf("steps cut (-want +got):\n%s", d)
	}
	// One line too many carries the next response into the cut.
	expectFailure(t, "model turns", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{extraLine: 1}, data, full, nil) })
	// Two lines too many carry a whole step.
	expectFailure(t, "prefix decodes to 2 steps", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{extraLine: 2}, data, full, nil) })
	expectFailure(t, "got <nil>", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{noBoundary: true}, data, full, nil) })
	expectFailure(t, "toy refuses to cut", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{refuseCuts: true}, data, full, nil) })
	// A cut whose calls differ from the original's (a tool renamed, the
	// layout kept).
	other := decodeToy(t, toy{}, strings.Replace(toySession, "c2 run", "c2 cat", 1))
	expectFailure(t, "step 2 of prefix 2 differs", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{}, data, other, nil) })
}

func TestCheckPrefixes(t *testing.T) {
	data := []byte(toySession)
	full := decodeToy(t, toy{}, toySession)
	var seen []int
	expectFailure(t, "", func(t testing.TB) {
		CheckPrefixes(t, toy{}, data, full, AllSteps(full), func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory) {
			seen = append(seen, n)
			Verbatim(data, full, true)(t, n, cut, pt)
		})
	})
	if d := cmp.Diff([]int{1, 2, 3}, seen); d != "" {
		t.Errorf("steps cut (-want +got):\n%s", d)
	}
	// Without CheckBoundary the toy cuts "before step 0" to the whole file.
	expectFailure(t, `containing "after-step 0: steps are numbered from 1"`, func(t testing.TB) {
		CheckPrefixes(t, toy{noBoundary: true}, data, full, nil, nil)
	})
	if got := AllSteps(decodeToy(t, toy{}, "say hi\n")); len(got) != 0 {
		t.Errorf("AllSteps of no steps = %v", got)
	}
}

func TestVerbatim(t *testing.T) {
	data := []byte(toySession)
	full := decodeToy(t, toy{}, toySession)
	renamed := decodeToy(t, toy{}, strings.Replace(toySession, "c2 run", "c2 cat", 1))
	named := decodeToy(t, toy{}, toySession)
	named.SessionID = "s1"
	check := func(data []byte, full *trajectory.Trajectory, bytePrefix bool) func(t testing.TB) {
		return func(t testing.TB) { CheckPrefixes(t, toy{}, data, full, []int{2}, Verbatim(data, full, bytePrefix)) }
	}
	expectFailure(t, "", check(data, full, true))
	// The toy cuts the file it is given, so a prefix of other bytes is
	// not a prefix of data.
	expectFailure(t, "not a byte prefix", func(t testing.TB) {
		CheckPrefixes(t, toy{}, data, full, []int{2}, Verbatim([]byte("say hi\n"+toySession), full, true))
	})
	expectFailure(t, "prefix actions differ", func(t testing.TB) {
		CheckPrefixes(t, toy{}, data, full, []int{2}, Verbatim(data, renamed, false))
	})
	expectFailure(t, `prefix has session "" version "", want "s1" ""`, check(data, named, false))
}

// A step behind an incomplete batch cannot be reached: the cut must be
// refused there, as CheckBoundary refuses it.
func TestUnreachableSteps(t *testing.T) {
	const src = "call c1 run\ncall c2 run\nobs c2 ok\n"
	tr := decodeToy(t, toy{}, src)
	expectFailure(t, "", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{}, []byte(src), tr, nil) })
	expectFailure(t, "", func(t testing.TB) { CheckDecode(t, toy{}, []byte(src), nil) })
	expectFailure(t, "want the boundary's refusal", func(t testing.TB) { CheckPrefixRoundTrip(t, toy{noBoundary: true}, []byte(src), tr, nil) })
	expectFailure(t, "want the boundary's refusal", func(t testing.TB) { CheckDecode(t, toy{noBoundary: true}, []byte(src), nil) })
}

func TestSampleSteps(t *testing.T) {
	for n, want := range map[int][]int{0: nil, 1: {1}, 2: {1, 2}, 3: {1, 2, 3}, 4: {1, 2, 3, 4}, 10: {1, 2, 5, 9, 10}} {
		if d := cmp.Diff(want, sampleSteps(n)); d != "" {
			t.Errorf("sampleSteps(%d) (-want +got):\n%s", n, d)
		}
	}
}

func TestCheckDecode(t *testing.T) {
	good, bad := []byte(toySession), []byte("say\nbogus\n")
	always := func(*trajectory.Trajectory, int) bool { return true }
	expectFailure(t, "", func(t testing.TB) { CheckDecode(t, toy{}, good, nil) })
	expectFailure(t, "", func(t testing.TB) { CheckDecode(t, toy{}, bad, nil) })
	expectFailure(t, "not *trajectory.Error", func(t testing.TB) { CheckDecode(t, toy{plainErrors: true}, bad, nil) })
	expectFailure(t, "prefix of step 1 has 2 steps", func(t testing.TB) { CheckDecode(t, toy{extraLine: 2}, good, nil) })
	expectFailure(t, "WritePrefix step 1: toy refuses to cut", func(t testing.TB) { CheckDecode(t, toy{refuseCuts: true}, good, nil) })
	expectFailure(t, "", func(t testing.TB) { CheckDecode(t, toy{refuseCuts: true}, good, always) })
	expectFailure(t, "is not a span of the 112-byte file", func(t testing.TB) { CheckDecode(t, toy{pastEnd: true}, good, nil) })
	if tr := CheckDecode(t, toy{}, good, nil); tr == nil || len(tr.Actions) != 6 {
		t.Errorf("CheckDecode of a good input returned %v", tr)
	}
	if tr := CheckDecode(t, toy{}, bad, nil); tr != nil {
		t.Errorf("CheckDecode of a refused input returned %v", tr)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden", "x.golden")
	expectFailure(t, "run go test -update", func(t testing.TB) { Golden(t, path, "a\n") })
	*update = true
	expectFailure(t, "", func(t testing.TB) { Golden(t, path, "a\n") })
	*update = false
	if got, err := os.ReadFile(path); err != nil || string(got) != "a\n" {
		t.Fatalf("-update wrote %q, %v", got, err)
	}
	expectFailure(t, "", func(t testing.TB) { Golden(t, path, "a\n") })
	expectFailure(t, "summary differs from "+path, func(t testing.TB) { Golden(t, path, "b\n") })
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	expectFailure(t, "no files match", func(t testing.TB) { Glob(t, filepath.Join(dir, "*.json")) })
	// One empty pattern is a moved folder even when another matches.
	writeFiles(t, dir, map[string]string{"a.jsonl": "x"})
	expectFailure(t, "no files match "+filepath.Join(dir, "*.json"), func(t testing.TB) {
		Glob(t, filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "*.json"))
	})
}

// writeFiles creates files (path relative to dir -> content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckDetect(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"toy/a.jsonl": toySession, "toy/b.json": "say hi\n", "other/c.jsonl": "{}\n", "README": "x"})
	expectFailure(t, "", func(t testing.TB) { CheckDetect(t, toy{}, root) })

	writeFiles(t, root, map[string]string{"toy/d.jsonl": "{}\n", "other/e.jsonl": "say hi\n"})
	got := failures(func(t testing.TB) { CheckDetect(t, toy{}, root) })
	want := []string{"Detect(other/e.jsonl) = true, want false", "Detect(toy/d.jsonl) = false, want true"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	expectFailure(t, "no toy files", func(t testing.TB) { CheckDetect(t, toy{}, filepath.Join(root, "other")) })
}

func TestCorpusDetect(t *testing.T) {
	root, own := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{"toy/a.jsonl": toySession, "toy/a.meta.json": "{}\n", "other/c.jsonl": "{}\n"})
	writeFiles(t, own, map[string]string{"b.jsonl": "say hi\n"})
	c := Corpus{Format: toy{}, Globs: []string{filepath.Join(root, "toy", "*.jsonl"), filepath.Join(own, "*.jsonl")}}
	expectFailure(t, "", func(t testing.TB) { c.TestDetect(t, root) })

	// A sidecar the format claims, and a package file it does not.
	writeFiles(t, root, map[string]string{"toy/b.meta.json": "say hi\n"})
	writeFiles(t, own, map[string]string{"d.jsonl": "{}\n"})
	got := failures(func(t testing.TB) { c.TestDetect(t, root) })
	want := []string{"Detect(toy/b.meta.json) = true, want false", "Detect(" + filepath.Join(own, "d.jsonl") + ") = false, want true"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The hand-written heads are checked against every real format, so that a
// format adopting CheckDetect inherits only true expectations: an agent
// folder's heads are claimed by its format alone, the unclaimed by none.
func TestHeadsBelongToTheirAgents(t *testing.T) {
	folder := map[string]string{"claude": "claude-code", "codex": "codex", "opencode": "opencode", "pi": "pi",
		"openhands": "openhands", "miniswe": "mini-swe-agent", "sweagent": "swe-agent", "copilot": "copilot"}
	seen := map[string]bool{}
	for _, h := range loadHeads(t) {
		var want []string
		if dir := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(h.path)))); dir != "formattest" {
			a, ok := folder[dir]
			if _, agent := agents.Get(dir); !ok && agent {
				a, ok = dir, true // a folder named as its agent needs no entry
			}
			if !ok {
				t.Fatalf("%s: heads of folder %s, which this test does not map to an agent", h.path, dir)
			}
			want, seen[a] = []string{a}, true
		}
		if d := cmp.Diff(want, agents.Matching(h.text)); d != "" {
			t.Errorf("%s claimed by (-want +got):\n%s", h.path, d)
		}
	}
	for _, f := range agents.All() {
		if !seen[f.Agent()] {
			t.Errorf("no head of %s", f.Agent())
		}
	}
	if HeadSize != agents.HeadSize {
		t.Errorf("HeadSize = %d, agents.HeadSize = %d", HeadSize, agents.HeadSize)
	}
}

// TestCorpus runs a Corpus's own tests over toy samples; it fails if they
// do.
func TestCorpus(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": toySession, "b.txt": "say only text\n", "bad.txt": "nonsense\n"})
	c := Corpus{
		Format:    toy{},
		Globs:     []string{filepath.Join(dir, "*.txt")},
		Refused:   map[string]Refusal{"bad.txt": Malformed(1, `unknown record "nonsense"`)},
		Columns:   []Column{Sizes},
		GoldenDir: filepath.Join(dir, "golden"),
		Bad:       []BadInput{Refuse("orphan result", "obs c9 x\n", Malformed(1, "result for unknown call c9"))},
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		tr := decodeToy(t, toy{}, map[string]string{"a.txt": toySession, "b.txt": "say only text\n"}[name])
		writeFiles(t, c.GoldenDir, map[string]string{name + ".golden": Summary(tr, Sizes)})
	}
	c.TestGolden(t)
	c.TestBadInputs(t)
	var names []string
	c.ForEach(t, func(t *testing.T, name string, data []byte, tr *trajectory.Trajectory) {
		names = append(names, name)
		if tr.Lines == 0 || len(data) == 0 {
			t.Errorf("%s: empty decode", name)
		}
	})
	if d := cmp.Diff([]string{"a.txt", "b.txt"}, names); d != "" {
		t.Errorf("ForEach visited (-want +got):\n%s", d)
	}
}

func TestCheckLean(t *testing.T) {
	data := []byte(toySession)
	full := decodeToy(t, toy{}, toySession)
	expectFailure(t, "", func(t testing.TB) { checkLean(t, toy{}, data, full, []Column{Sizes}) })
	expectFailure(t, "a lean decode kept 2 bytes of content", func(t testing.TB) {
		checkLean(t, toy{leanContent: true}, data, full, []Column{Sizes})
	})
}
