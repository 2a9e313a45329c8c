package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// reference is what valid must agree with: encoding/json's grammar plus
// strict UTF-8 (encoding/json itself accepts invalid UTF-8 in strings).
func reference(b []byte) bool { return json.Valid(b) && utf8.Valid(b) }

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x"]} `, `"s"`, `0`, `-`, `01`, `1.`, `1e`, `1e+`,
		`{"a":}`, `{"a" 1}`, `{,}`, `[1,]`, `{"a":1,}`, `{"a":"\u00e9\n\"\\\/"}`, `{"a":"\u12"}`, `{"a":"\x"}`,
		"{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", "{\"a\":\"é漢字🙂\"}", "{\"a\":\"\xed\xa0\x80\"}", `tru`, `nul`, `[`, `{"a":[}`,
		`{"abcdefghijklmnopq":"0123456789abcdef\"0123"}`, `{"k":"0123456789\\0123456789"}`, "{\"k\":\"01234567\x7f89\"}",
		strings.Repeat("[", 999) + strings.Repeat("]", 999),
		// Escapes around the closing quote, with and without a control byte
		// elsewhere on the line (the two string scanners).
		`{"a":"x\"y"}`, `{"a":"\\"}`, `{"a":"\\\""}`, `{"a":"\\\"}`, `{"a":"\u00"}`, `{"a":"\u00"1"}`, `{"a":"\"`, `{"a":"\`,
		`{"a":"\"\"\"","b":"\\"}`, `{"a":"ab\"cd\"ef"}`, "{\"a\":\"x\\\"y\"}\t", "\t{\"a\":\"\\\\\"}",
		`{"a":"\q"}`, `{"a":"é\"é"}`, `{"a":"0123456789abcdef0123456789abcdef0123\"45\\"}`,
		`{"a":"0123456789abcdef0123456789abcdef0123\u00e9\"`, `{"0123456\"":"01234567\\89abcdef0123456789abcdef\/"}`,
	}
	for _, c := range cases {
		if got, want := valid([]byte(c)), reference([]byte(c)); got != want {
			t.Errorf("valid(%q) = %v, encoding/json+utf8 says %v", c, got, want)
		}
	}
}

func TestValidOnCorpusLines(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/trajectories/*/*.jsonl")
	if len(files) == 0 {
		t.Skip("no corpus copied yet")
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if got, want := valid(line), reference(line); got != want {
				t.Fatalf("%s: valid=%v reference=%v for %.200q", f, got, want, line)
			}
			n++
		}
	}
	t.Logf("%d lines agree", n)
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u0041",{"b":null}]}`, `{"a":"é"}`, "{\"a\":\"\xff\"}", `[1e5,-0.5]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if depth(b) > maxDepth {
			return
		}
		if got, want := valid(b), reference(b); got != want {
			t.Fatalf("valid(%q) = %v, reference %v", b, got, want)
		}
	})
}

func depth(b []byte) int {
	d, m := 0, 0
	for _, c := range b {
		if c == '[' || c == '{' {
			d++
			m = max(m, d)
		}
	}
	return m
}

func BenchmarkValidate(b *testing.B) {
	line := []byte(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"` +
		strings.Repeat(`total 48\ndrwxr-xr-x  5 user staff  160 Sep 24 19:22 src\n`, 2000) + `"}}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for i := 0; i < b.N; i++ {
			json.Valid(line)
		}
	})
	b.Run("pvisor", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for i := 0; i < b.N; i++ {
			valid(line)
		}
	})
}

func BenchmarkValidateGJSON(b *testing.B) {
	line := []byte(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"` +
		strings.Repeat(`total 48\ndrwxr-xr-x  5 user staff  160 Sep 24 19:22 src\n`, 2000) + `"}}`)
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		gjsonValid(line)
	}
}

var gjsonValid = gjson.ValidBytes
