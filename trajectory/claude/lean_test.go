package claude

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// longSession is a chain of n tool calls with their results, more entries
// than one chunk of the entry list holds.
func longSession(n int) string {
	lines := []string{prompt("u0", "", "go")}
	parent := "u0"
	for i := 1; i <= n; i++ {
		a, r, id := fmt.Sprintf("a%d", i), fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i)
		lines = append(lines, asst(a, parent, fmt.Sprintf("msg_%d", i), use(id, "Bash", `{"command":"echo `+id+`"}`)),
			res(r, a, id, "out "+id))
		parent = r
	}
	return file(lines...)
}

// A session longer than one chunk of entries decodes alike whole and as a
// prefix, at boundaries on both sides of each chunk edge.
func TestLongSessionAcrossEntryChunks(t *testing.T) {
	n := entryChunk + entryChunk/2 // entry 0 is the prompt, step i's result entry 2i: step 2048's opens the second chunk
	src := longSession(n)
	tr, err := decodeString(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tr.Steps()); got != n {
		t.Fatalf("%d steps, want %d", got, n)
	}
	if c := tr.Actions[n-1].Calls[0]; c.ID != fmt.Sprintf("toolu_%d", n) || c.Observation == nil || c.Observation.Content != fmt.Sprintf("out toolu_%d", n) {
		t.Fatalf("last call %+v", c)
	}
	edge := entryChunk / 2
	formattest.CheckDecodePrefix(t, New(), []byte(src), trajectory.Options{}, 1, edge-1, edge, edge+1, entryChunk, n)
}

// The lean pass keeps no message, tool_use or tool_result id, only their
// hashes, nor any block's or result's body: on a large file these were
// over half of its memory. The
// prefix still has every id, read again from the file.
func TestLeanPassKeepsNoIDs(t *testing.T) {
	src := longSession(50)
	d := newDecoder(trajectory.Options{})
	tr, err := d.decode(strings.NewReader(src), strings.NewReader(src), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.msgNames) != 0 {
		t.Errorf("%d message ids kept", len(d.msgNames))
	}
	if len(d.bodies) != 0 || len(d.rbodies) != 0 {
		t.Errorf("%d block and %d result bodies kept", len(d.bodies), len(d.rbodies))
	}
	if len(d.blocks) != 50 || len(d.results) != 50 {
		t.Fatalf("%d blocks, %d results: the case tests nothing", len(d.blocks), len(d.results))
	}
	for i, a := range tr.Actions[:3] {
		want := fmt.Sprintf("toolu_%d", i+1)
		if c := a.Calls[0]; c.ID != want || string(c.Arguments) != `{"command":"echo `+want+`"}` || c.Observation.Content != "out "+want {
			t.Errorf("step %d: call %s %s %q", i+1, c.ID, c.Arguments, c.Observation.Content)
		}
	}
}
