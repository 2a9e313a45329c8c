package jsonl

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

func TestReader(t *testing.T) {
	type line struct {
		N           int
		Offset, End int64
		Data        string
	}
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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in))
			var got []line
			for r.Next() {
				l := r.Line()
				got = append(got, line{l.N, l.Offset, l.End, string(l.Data)})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.torn, r.Torn()); d != "" {
				t.Errorf("torn (-want +got):\n%s", d)
			}
			err := r.Err()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var te *trajectory.Error
			if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want *trajectory.Error containing %q", err, tc.wantErr)
			}
		})
	}
}
