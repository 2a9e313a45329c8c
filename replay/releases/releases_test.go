package releases

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/replay/tested"
)

// fakeRegistry answers from canned `npm view --json` and `pip index
// versions` output, parsed by the real parsers.
type fakeRegistry map[string]string

func (f fakeRegistry) Lookup(_ context.Context, registry, pkg string) (*Info, error) {
	out, ok := f[pkg]
	if !ok {
		return nil, fmt.Errorf("npm view: E404 %s is not in this registry", pkg)
	}
	if registry == tested.RegistryPyPI {
		return ParsePipIndex([]byte(out))
	}
	return ParseNPM([]byte(out))
}

// TestCheck: behind counts the releases after the tested newest, a package
// its agent moved away from says so (and that it stopped), and a failed
// lookup is a row, not an error.
func TestCheck(t *testing.T) {
	rels, succ, err := tested.ParseFile(`
pi   @old/pi   0.73.1  pi
pi   @new/pi   1.5.2   pi  node>=22.19
cx   @cx/cli   0.171.0 codex
ms   pypi:mini 2.4.5   mini
gone @gone/x   1.0.0   x
successor pi @old/pi @new/pi
`)
	if err != nil {
		t.Fatal(err)
	}
	reg := fakeRegistry{
		"@old/pi": `{"dist-tags":{"latest":"0.73.1"},"versions":["0.72.1","0.73.0","0.73.1"],"time":{"modified":"2026-11-01T00:00:00.000Z","0.73.1":"2026-07-01T00:00:00.000Z"}}`,
		"@new/pi": `{"dist-tags":{"latest":"1.6.0"},"versions":["0.74.0","1.5.2","1.6.0-beta.1","1.6.0"],"time":{"1.6.0":"2026-11-20T00:00:00.000Z"}}`,
		"@cx/cli": `{"dist-tags":{"latest":"0.172.0"},"versions":["0.171.0","0.172.0"],"deprecated":"use @cx/next"}`,
		"mini":    "WARNING: pip index is currently an experimental command.\nmini (2.4.6)\nAvailable versions: 2.4.6, 2.4.5, 1.17.5\n",
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	got := Check(context.Background(), reg, rels, succ, now)
	want := []Row{
		{Agent: "pi", Package: "@old/pi", Registry: "npm", TestedNewest: "0.73.1", RegistryNewest: "0.73.1", Behind: 0,
			Notice: "stopped at 0.73.1 (2026-07-01); moved to @new/pi (newest 1.6.0)"},
		{Agent: "pi", Package: "@new/pi", Registry: "npm", TestedNewest: "1.5.2", RegistryNewest: "1.6.0", Behind: 1},
		{Agent: "cx", Package: "@cx/cli", Registry: "npm", TestedNewest: "0.171.0", RegistryNewest: "0.172.0", Behind: 1,
			Notice: "deprecated: use @cx/next"},
		{Agent: "ms", Package: "mini", Registry: "pypi", TestedNewest: "2.4.5", RegistryNewest: "2.4.6", Behind: 1},
		{Agent: "gone", Package: "@gone/x", Registry: "npm", TestedNewest: "1.0.0", Behind: -1,
			Error: "npm view: E404 @gone/x is not in this registry"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	var b bytes.Buffer
	Print(&b, got)
	for _, s := range []string{"AGENT", "@old/pi", "stopped at 0.73.1", "lookup failed: npm view: E404"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

// TestSuccessorWithoutTestedLine: a move to a package no line tests yet is
// a row of its own that says so.
func TestSuccessorWithoutTestedLine(t *testing.T) {
	reg := fakeRegistry{
		"@a/x": `{"dist-tags":{"latest":"1.0.0"},"versions":"1.0.0","time":{"1.0.0":"2026-11-30T00:00:00.000Z"}}`,
		"@b/x": `{"dist-tags":{"latest":"2.0.0"},"versions":["2.0.0"],"time":{"2.0.0":"2026-12-01T00:00:00.000Z"}}`,
	}
	rows := Check(context.Background(), reg, []tested.Release{{Agent: "x", Package: "@a/x", Version: "1.0.0", Registry: "npm"}},
		[]tested.Successor{{Agent: "x", From: "@a/x", To: "@b/x"}}, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	if len(rows) != 2 || rows[0].Notice != "moved to @b/x (newest 2.0.0)" || rows[1].TestedNewest != "" ||
		rows[1].Notice != "successor of @a/x, no release of it is tested" || rows[1].Behind != -1 {
		t.Errorf("%+v", rows)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseNPM([]byte(`not json`)); err == nil {
		t.Error("bad npm output parsed")
	}
	if _, err := ParseNPM([]byte(`{"versions":["1.0.0"]}`)); err == nil {
		t.Error("npm output without a latest release parsed")
	}
	if _, err := ParsePipIndex([]byte("ERROR: No matching distribution found for x\n")); err == nil {
		t.Error("pip output without releases parsed")
	}
}
