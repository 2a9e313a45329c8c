package pi

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// BenchmarkDecode compares a decode of the largest corpus session with a
// plain line scan of the same bytes, the baseline the design asks decoding
// to stay within about twice of.
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile(corpusDir + "/pimono_before-compaction.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline-bufio", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sc := bufio.NewReaderSize(bytes.NewReader(data), 256<<10)
			for {
				if _, err := sc.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
					break
				}
			}
		}
	})
	for _, lean := range []bool{false, true} {
		name := "decode"
		if lean {
			name = "decode-lean"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: lean}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSONLReader(b *testing.B) {
	data, err := os.ReadFile(corpusDir + "/pimono_before-compaction.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		jr := jsonl.NewReader(bytes.NewReader(data))
		for jr.Next() {
		}
	}
}
