package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pvisor/pvisor/result"
)

// writeManifest writes m as result.WriteJSON would, byte for byte, but one
// batch at a time: a plan that replays thousands of steps encodes to tens
// of megabytes, which encoding/json would first build whole in memory.
func writeManifest(path string, m *Manifest) error {
	if len(m.Batches) == 0 {
		return result.WriteJSON(path, m) // small; and nil encodes as null
	}
	head := *m
	head.Batches = []ManifestBatch{}
	var hb bytes.Buffer
	enc := json.NewEncoder(&hb)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	// Batches is the last member: the head ends with its empty array.
	const empty = "[]\n}\n"
	if !bytes.HasSuffix(hb.Bytes(), []byte(empty)) {
		return fmt.Errorf("encode manifest: batches is not its last member")
	}
	f, err := result.CreateAtomic(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriterSize(f, 64<<10)
	w.Write(hb.Bytes()[:hb.Len()-len(empty)])
	w.WriteString("[")
	var eb bytes.Buffer
	be := json.NewEncoder(&eb)
	be.SetEscapeHTML(false)
	be.SetIndent("    ", "  ")
	for i := range m.Batches {
		eb.Reset()
		if err := be.Encode(&m.Batches[i]); err != nil {
			return fmt.Errorf("encode manifest batch %d: %w", i+1, err)
		}
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n    ")
		w.Write(bytes.TrimSuffix(eb.Bytes(), []byte("\n")))
	}
	w.WriteString("\n  ]\n}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
