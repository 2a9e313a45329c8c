package resume

import (
	"bytes"
	"context"
	"testing"

	"github.com/pvisor/pvisor/bridge"
)

// The watch forwards every body unchanged and remembers the first request
// its detector calls compacted; without a detector it only forwards.
func TestCompactionWatch(t *testing.T) {
	w := &compactionWatch{compacted: func(b []byte) bool { return bytes.Contains(b, []byte("SUMMARY")) }}
	for _, body := range []string{"history", "SUMMARY one", "SUMMARY two"} {
		got, err := w.Check(context.Background(), &bridge.Request{Body: []byte(body)})
		if err != nil || string(got) != body {
			t.Fatalf("Check(%q) = %q, %v", body, got, err)
		}
	}
	if w.first != 2 || w.n != 3 {
		t.Errorf("first compacted request %d of %d, want 2 of 3", w.first, w.n)
	}
	none := &compactionWatch{}
	if got, _ := none.Check(context.Background(), &bridge.Request{Body: []byte("SUMMARY")}); string(got) != "SUMMARY" || none.first != 0 {
		t.Errorf("without a detector: %q, first %d", got, none.first)
	}
}
