package openhands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// bigV1 repeats the events of the generated V1 conversation (fresh ids per
// copy) until the JSONL is about n bytes.
func bigV1(b *testing.B, n int) []byte {
	b.Helper()
	data, _ := formattest.DecodeFile(b, New(), generated)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var out bytes.Buffer
	for c := 0; out.Len() < n; c++ {
		sfx := "-" + strconv.Itoa(c)
		for _, l := range lines {
			for _, k := range []string{`"id":"`, `"action_id":"`, `"tool_call_id":"`, `"llm_response_id":"`} {
				l = strings.ReplaceAll(l, k, k+sfx)
			}
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// BenchmarkDecodeV1: the decoder against the baseline of unmarshalling
// every line into a map (what a naive reader does), on the same bytes.
func BenchmarkDecodeV1(b *testing.B) {
	data := bigV1(b, 16<<20)
	b.Run("baseline-unmarshal-lines", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
			if err != nil {
				b.Fatal(err)
			}
			if len(tr.Steps()) == 0 {
				b.Fatal("no steps")
			}
		}
	})
}
