package jsondoc

import (
	"strings"
	"testing"
	"testing/iotest"
)

// The line counter forgets the newlines before the last offset asked
// about, so walking a large document keeps only the decoder's read-ahead.
func TestLineCounterBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	const n = 20000
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`{"i": 1}`)
	}
	b.WriteString("\n]\n")
	d := New(strings.NewReader(b.String()))
	if err := d.Delim('[', "array"); err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := 0; d.More(); i++ {
		_, line, err := d.Raw("element")
		if err != nil {
			t.Fatal(err)
		}
		if line != i+2 {
			t.Fatalf("element %d on line %d, want %d", i, line, i+2)
		}
		most = max(most, len(d.lc.nl))
	}
	// The decoder reads ahead in blocks of a few KiB: at 10 bytes a line
	// that is a few hundred newlines, never the file's 20000.
	if most > 2000 {
		t.Errorf("kept %d newline offsets at once", most)
	}
}

func TestLineAtEarlierOffset(t *testing.T) {
	c := &lineCounter{r: iotest.OneByteReader(strings.NewReader("a\nb\nc\nd"))}
	buf := make([]byte, 16)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	for _, tt := range []struct {
		off  int64
		want int
	}{{0, 1}, {1, 1}, {2, 2}, {5, 3}, {6, 4}, {2, 4}} {
		if got := c.line(tt.off); got != tt.want {
			t.Errorf("line(%d) = %d, want %d", tt.off, got, tt.want)
		}
	}
}
