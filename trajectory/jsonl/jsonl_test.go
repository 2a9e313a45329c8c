package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

func TestReader(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []line
		torn    *trajectory.TornTail
		wantErr string
	}{
		{name: "two lines", in: "{\"a\":1}\n{\"b\":2}\n", want: []line{{1, 0, 8, `{"a":1}`}, {2, 8, 16, `{"b":2}`}}},
		{name: "blank lines skipped", in: "\n{\"a\":1}\n\n", want: []line{{2, 1, 9, `{"a":1}`}}},
		{name: "crlf", in: "{\"a\":1}\r\n", want: []line{{1, 0, 9, `{"a":1}`}}},
		{name: "valid unterminated last line", in: "{\"a\":1}\n{\"b\":2}", want: []line{{1, 0, 8, `{"a":1}`}, {2, 8, 15, `{"b":2}`}}},
		{name: "torn tail", in: "{\"a\":1}\n{\"b\":", want: []line{{1, 0, 8, `{"a":1}`}}, torn: &trajectory.TornTail{Line: 2, Offset: 8, Bytes: 5}},
		{name: "bad middle line", in: "{\"a\":1}\n{\"b\":\n{\"c\":3}\n", want: []line{{1, 0, 8, `{"a":1}`}}, wantErr: "line 2: not valid JSON"},
		{name: "array line", in: "[1]\n", wantErr: "line 1: expected a JSON object, found an array"},
		{name: "string line", in: "\"x\"\n", wantErr: "line 1: expected a JSON object, found a string"},
		{name: "invalid utf8", in: "{\"a\":\"\xff\"}\n", wantErr: "line 1: not valid UTF-8"},
		{name: "too long", in: "{\"a\":\"" + strings.Repeat("x", MaxLineBytes) + "\"}\n", wantErr: "line 1: line is longer than 16 MiB"},
		{name: "long but fine", in: "{\"a\":\"" + strings.Repeat("x", 1<<20) + "\"}\n", want: []line{{1, 0, 1<<20 + 9, "{\"a\":\"" + strings.Repeat("x", 1<<20) + "\"}"}}},
	}
	// Tiny batches and one-byte reads put batch boundaries everywhere,
	// including inside lines and right after a newline.
	readers := []struct {
		name  string
		batch int
		wrap  func(io.Reader) io.Reader
	}{
		{"default", batchBytes, func(r io.Reader) io.Reader { return r }},
		{"batch=1", 1, func(r io.Reader) io.Reader { return r }},
		{"batch=9/onebyte", 9, iotest.OneByteReader},
		{"batch=300K/half", 300 << 10, iotest.HalfReader},
	}
	for _, tc := range cases {
		for _, rd := range readers {
			if rd.batch < 100 && len(tc.in) > 1<<20 {
				continue
			}
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				r := NewReader(rd.wrap(strings.NewReader(tc.in)))
				r.batchBytes = rd.batch
				checkReader(t, r, tc.want, tc.torn, tc.wantErr)
			})
		}
	}
}

type line struct {
	N           int
	Offset, End int64
	Data        string
}

func checkReader(t *testing.T, r *Reader, want []line, torn *trajectory.TornTail, wantErr string) {
	t.Helper()
	var got []line
	for r.Next() {
		l := r.Line()
		got = append(got, line{l.N, l.Offset, l.End, string(l.Data)})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	if d := cmp.Diff(torn, r.Torn()); d != "" {
		t.Errorf("torn (-want +got):\n%s", d)
	}
	err := r.Err()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	var te *trajectory.Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error %v, want *trajectory.Error containing %q", err, wantErr)
	}
}

// TestReaderReadError: the lines before a failing read are yielded, the
// partial line before it is not, and the error is the read's.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, b := range []int{1, 5, batchBytes} {
		r := NewReader(io.MultiReader(strings.NewReader("{\"a\":1}\n{\"b\":"), iotest.ErrReader(boom)))
		r.batchBytes = b
		var got []string
		for r.Next() {
			got = append(got, string(r.Line().Data))
		}
		if d := cmp.Diff([]string{`{"a":1}`}, got); d != "" || !errors.Is(r.Err(), boom) {
			t.Errorf("batch %d: lines (-want +got):\n%s\nerr %v, want %v", b, d, r.Err(), boom)
		}
	}
}

// TestReaderBatchesAgree reads every corpus file, and the same file with a
// bad line in the middle, with small and default batches: the lines, the
// counts and the error must not depend on where batches are cut.
func TestReaderBatchesAgree(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/trajectories/*/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	read := func(data []byte, batch int) (lines []Line, n int, err error) {
		r := NewReader(bytes.NewReader(data))
		r.batchBytes = batch
		for r.Next() {
			l := r.Line()
			l.Data = bytes.Clone(l.Data)
			lines = append(lines, l)
		}
		return lines, r.Lines(), r.Err()
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mid := bytes.IndexByte(data[len(data)/2:], '\n')
		broken := data
		if mid >= 0 {
			at := len(data)/2 + mid + 1
			broken = append(append(bytes.Clone(data[:at]), "{\"torn\":\n"...), data[at:]...)
		}
		for _, in := range [][]byte{data, broken} {
			want, wantN, wantErr := read(in, batchBytes)
			for _, b := range []int{1, 100, 4 << 10} {
				got, n, err := read(in, b)
				if n != wantN || len(got) != len(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s, batch %d: %d lines, %d objects, err %v; default batches: %d, %d, %v", f, b, n, len(got), err, wantN, len(want), wantErr)
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.N != w.N || g.Offset != w.Offset || g.End != w.End || !bytes.Equal(g.Data, w.Data) {
						t.Fatalf("%s, batch %d: object %d is line %d [%d,%d), default batches say line %d [%d,%d)", f, b, i, g.N, g.Offset, g.End, w.N, w.Offset, w.End)
					}
				}
			}
		}
	}
}
