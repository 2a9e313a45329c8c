package opencode

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// BenchmarkDecode decodes a run-event stream made of one real session
// repeated to about 10 MB, next to a plain bufio line read and the shared
// JSONL reader of the same bytes as baselines.
func BenchmarkDecode(b *testing.B) {
	one, err := os.ReadFile("testdata/ortus_run_session2.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat(one, (10<<20)/len(one))
	b.Run("baseline-bufio", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			br := bufio.NewReaderSize(bytes.NewReader(data), 256<<10)
			for {
				if _, err := br.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
					break
				}
			}
		}
	})
	b.Run("baseline-jsonl", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			jr := jsonl.NewReader(bytes.NewReader(data))
			for jr.Next() {
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
