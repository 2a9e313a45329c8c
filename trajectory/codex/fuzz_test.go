package codex

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

func FuzzDecode(f *testing.F) {
	for _, path := range corpusFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 24<<10 {
			// Keep seeds small so the mutator explores structure; a cut
			// JSONL file is still a good seed (the reader sees a torn tail).
			data = data[:24<<10]
		}
		f.Add(data)
	}
	f.Add(rollout(meta, user, fc("a", "exec_command", `{"cmd":"ls"}`), fc("b", "shell", `{"command":["ls"]}`), tok,
		out("b", "Process exited with code 1"), out("a", "x"), say("ok")))
	f.Add(rollout(meta, user, fc("a", "shell", `{}`), out("a", "x"), out("a", "y")))
	f.Add(rollout(meta, user, fc("a", "shell", `{}`), tok, say("meanwhile"), out("a", "x")))
	f.Add(rollout(`{"timestamp":"t","type":"session_meta","payload":{"id":"b","history_base":{"thread_id":"p"}}}`))
	f.Add(rollout(`{"type":"thread.started","thread_id":"x"}`))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(data)
		tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			if _, ok := err.(*trajectory.Error); !ok {
				t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
			}
			formattest.CheckDecodePrefix(t, New(), data, trajectory.Options{}, 1)
			return
		}
		checkInvariants(t, tr)
		steps := tr.Steps()
		formattest.CheckDecodePrefix(t, New(), data, trajectory.Options{}, uniq(1, len(steps), len(steps)+1)...)
		for _, n := range uniq(1, len(steps)) {
			if n < 1 || n > len(steps) {
				continue
			}
			var buf bytes.Buffer
			if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
				if trajectory.CheckBoundary(tr, n) == nil {
					t.Fatalf("WritePrefix(%d): %v", n, err)
				}
				continue
			}
			if !bytes.HasPrefix(data, buf.Bytes()) {
				t.Fatalf("prefix of step %d is not a byte prefix", n)
			}
			pt, err := New().Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatalf("prefix of step %d does not decode: %v", n, err)
			}
			if len(pt.Steps()) != n {
				t.Fatalf("prefix of step %d has %d steps", n, len(pt.Steps()))
			}
			for i, s := range pt.Steps() {
				if d := cmp.Diff(steps[i].Calls, s.Calls); d != "" {
					t.Fatalf("prefix of step %d: step %d differs:\n%s", n, i+1, d)
				}
			}
		}
	})
}
