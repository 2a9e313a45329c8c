package openhands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// bigArray repeats the events of a real eval history (with fresh ids) until
// the array is about n bytes.
func bigArray(b *testing.B, n int) []byte {
	b.Helper()
	data, _ := formattest.DecodeFile(b, New(), filepath.Join(corpusDir, "ohands_multi_swe_bench_output.instance1.jsonl"))
	// Re-serialise the history as an array, shifting ids and causes per copy.
	d, err := jsondoc.OpenRecords(bytes.NewReader(data), records)
	if err != nil {
		b.Fatal(err)
	}
	var events [][]byte
	for d.More() {
		raw, _, err := d.Raw("event")
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, append([]byte(nil), raw...))
	}
	var out bytes.Buffer
	out.WriteString("[\n")
	for copyN := 0; out.Len() < n; copyN++ {
		for i, e := range events {
			if copyN > 0 && i < 2 {
				continue // one system prompt and task only
			}
			var m map[string]any
			if err := json.Unmarshal(e, &m); err != nil {
				b.Fatal(err)
			}
			for _, k := range []string{"id", "cause"} {
				if v, ok := m[k].(float64); ok {
					m[k] = v + float64(copyN*1000)
				}
			}
			e, _ = json.Marshal(m)
			if out.Len() > 2 {
				out.WriteString(",\n")
			}
			out.Write(e)
		}
	}
	out.WriteString("\n]\n")
	return out.Bytes()
}

func BenchmarkDecode(b *testing.B) {
	data := bigArray(b, 32<<20)
	b.Run("bufio-read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			br := bufio.NewReader(bytes.NewReader(data))
			buf := make([]byte, 32<<10)
			for {
				if _, err := br.Read(buf); err == io.EOF {
					break
				}
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
