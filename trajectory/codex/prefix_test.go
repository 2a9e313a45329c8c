package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// DecodePrefix agrees with Decode on every sample at the first, middle and
// last steps and past the last, with and without observation content.
func TestDecodePrefixCorpus(t *testing.T) {
	for _, path := range corpusFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := decodeBytes(t, data)
			steps := []int{1}
			if err == nil {
				steps = formattest.SomeSteps(tr)
			}
			formattest.CheckDecodePrefix(t, New(), data, trajectory.Options{}, steps...)
			formattest.CheckDecodePrefix(t, New(), data, trajectory.Options{SkipObservationContent: true}, steps...)
		})
	}
}

// A call id or an output that refers to a call of a dropped step is the
// error a whole decode gives, found by the fallback to a whole decode.
func TestDecodePrefixDroppedCalls(t *testing.T) {
	step := func(id string) []string { return []string{fc(id, "shell", `{}`), out(id, "x"), say("ok")} }
	lines := func(parts ...[]string) []byte {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return rollout(all...)
	}
	tests := []struct {
		name string
		data []byte
		line int
		want string
	}{
		{"id of a dropped step reused", lines([]string{meta, user}, step("a"), step("b"), step("c"), step("b")), 12,
			"call_id b is used again (first call at line 6)"},
		{"output for a dropped step", lines([]string{meta, user}, step("a"), step("b"), step("c"), []string{out("b", "y")}), 12,
			"(called at line 6) comes after a later model response began at line 11"},
		{"output for no call after the boundary", lines([]string{meta, user}, step("a"), step("b"), []string{out("z", "y")}), 9,
			`call_id "z" has no earlier call`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trajectory.DecodePrefix(New(), bytes.NewReader(tt.data), bytes.NewReader(tt.data), trajectory.Options{}, 1)
			checkErr(t, err, trajectory.Malformed, tt.line, tt.want)
			formattest.CheckDecodePrefix(t, New(), tt.data, trajectory.Options{}, 1, 2, 3)
		})
	}
	ok := lines([]string{meta, user}, step("a"), step("b"), step("c"))
	tr, err := trajectory.DecodePrefix(New(), bytes.NewReader(ok), bytes.NewReader(ok), trajectory.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Actions) != 1 || tr.Cut != 1 {
		t.Errorf("kept %d actions, cut %d; want 1 and 1", len(tr.Actions), tr.Cut)
	}
}
