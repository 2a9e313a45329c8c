package codex

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// BenchmarkDecode decodes the largest corpus rollout; BenchmarkScan is the
// plain bufio read of the same bytes it is compared with (target: within 2x).
func BenchmarkDecode(b *testing.B) {
	data := benchData(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeContent(b *testing.B) {
	data := benchData(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	data := benchData(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		br := bufio.NewReaderSize(bytes.NewReader(data), 256<<10)
		for {
			if _, err := br.ReadSlice('\n'); err == io.EOF {
				break
			}
		}
	}
}

func benchData(b *testing.B) []byte {
	data, err := os.ReadFile(filepath.Join(corpusDir, "agentcmd_rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkJSONLReader(b *testing.B) {
	data := benchData(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := jsonl.NewReader(bytes.NewReader(data))
		for r.Next() {
		}
	}
}
