package pi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// A record written without its newline, then the next one appended after
// a resume, share a line. pi's loader (JSON.parse per line, malformed lines
// dropped) skips that line; the entry after it names a parent pi no longer
// has, so pi's walk from the leaf starts there. The decoder reads the file
// the same way and reports the line; a line that is really broken is
// still refused.
func TestJoinedRecords(t *testing.T) {
	call2 := strings.ReplaceAll(callMsg, "c1", "c2")
	res2 := strings.ReplaceAll(resMsg, "c1", "c2")
	user := `{"role":"user","content":"go on"}`
	src := lines(hdr3,
		v3("a1", "", callMsg), v3("r1", "a1", resMsg),
		v3("a2", "r1", `{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop"}`)+v3("u2", "a2", user),
		v3("a3", "u2", call2), v3("r3", "a3", res2))
	tr, err := New().Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]trajectory.JoinedLine{{Line: 4, Records: 2}}, tr.Joined); d != "" {
		t.Errorf("joined lines (-want +got):\n%s", d)
	}
	steps := tr.Steps()
	if len(steps) != 1 || steps[0].Calls[0].ID != "c2" {
		t.Errorf("steps = %s, want only c2's (pi resumes from the entry after the joined line)", formattest.Summary(tr))
	}

	// A broken line after a joined one is still refused (the reader
	// validates batches ahead and must recheck after skipping).
	_, err = New().Decode(strings.NewReader(lines(hdr3, v3("a1", "", callMsg), v3("r1", "a1", resMsg)+v3("u2", "r1", user),
		`{"type":"message","id":"x"`, v3("a3", "u2", call2))), trajectory.Options{})
	formattest.CheckError(t, err, formattest.Malformed(4, "not valid JSON"))

	for _, tc := range []struct{ name, line, want string }{
		{"torn record then a complete one", v3("a2", "r1", `{"role":"assistant","content":[`) + v3("u2", "a2", user), "not valid JSON"},
		{"object then garbage", v3("a2", "r1", user) + "xyz", "not valid JSON"},
		{"object then an array", v3("a2", "r1", user) + "[1]", "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Decode(strings.NewReader(lines(hdr3, v3("a1", "", callMsg), v3("r1", "a1", resMsg), tc.line)), trajectory.Options{})
			formattest.CheckError(t, err, formattest.Malformed(4, tc.want))
		})
	}
}

func TestJoinedRecordsPrefix(t *testing.T) {
	src := lines(hdr3, v3("a1", "", callMsg), v3("r1", "a1", resMsg)+v3("u2", "r1", `{"role":"user","content":"x"}`),
		v3("a3", "u2", strings.ReplaceAll(callMsg, "c1", "c3")), v3("r3", "a3", strings.ReplaceAll(resMsg, "c1", "c3")))
	tr, err := New().Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	formattest.CheckPrefixRoundTrip(t, New(), []byte(src), tr, nil)
}
