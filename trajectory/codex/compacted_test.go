package codex

import (
	"testing"

	"github.com/tidwall/gjson"
)

// Resume's Compacted tells Codex's summary handoff (what 0.171 sent after
// it auto-compacted) from a request that carries the history.
func TestResumeSeesCompaction(t *testing.T) {
	fx := load(t)
	in := gjson.GetBytes(fx.body, "input").Array()
	if resume.Compacted(fx.body) {
		t.Error("a request with the whole history is reported compacted")
	}
	if !resume.Compacted([]byte(compactedBody(t, in))) {
		t.Error("the summary handoff is not reported compacted")
	}
}
