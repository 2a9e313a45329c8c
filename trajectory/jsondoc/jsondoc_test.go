package jsondoc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// walk reads a whole document the way the decoders do: the elements of a
// top-level array or the members of a top-level object, each read whole.
func walk(d *jsondoc.Doc) error {
	tok, err := d.Open()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		for d.More() {
			if _, _, err := d.Raw("element"); err != nil {
				return err
			}
		}
		if err := d.Delim(']', "array"); err != nil {
			return err
		}
	case json.Delim('{'):
		for d.More() {
			k, err := d.Key("object")
			if err != nil {
				return err
			}
			if _, _, err := d.Raw(k); err != nil {
				return err
			}
		}
		if err := d.Delim('}', "object"); err != nil {
			return err
		}
	}
	return d.End("the document")
}

// readers hands the input over in the ways that split it differently
// between the decoder's reads, which is where a line count goes wrong.
var readers = map[string]func(string) io.Reader{
	"whole":    func(s string) io.Reader { return strings.NewReader(s) },
	"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	"data+err": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
}

// bigArray is an array of n one-line elements, element i on line i+2,
// followed by tail.
func bigArray(n int, tail string) string {
	var b strings.Builder
	b.WriteString("[\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`{"i": 1, "text": "some words to make the line longer than a few bytes"}`)
	}
	b.WriteString(tail)
	return b.String()
}

var bad = []struct {
	name, src string
	want      formattest.Refusal
}{
	// Syntax errors the scanner finds inside a value (offsets relative to
	// the value) and the Decoder's own token checks (absolute offsets).
	{"bad start", "x", formattest.Malformed(1, "start of file: invalid JSON: invalid character 'x'")},
	{"bad start after blank lines", "\n\n  x", formattest.Malformed(3, "start of file: invalid JSON")},
	{"inside a value", "[\n1,\n{\"a\": x}\n]", formattest.Malformed(3, "element: invalid JSON: invalid character 'x'")},
	{"inside a long value", "[\n{\"a\": [1,\n2,\n3,\n}]}]", formattest.Malformed(5, "element: invalid JSON")},
	{"missing comma", "[\n1\n2]", formattest.Malformed(3, "element: invalid JSON: expected comma after array element")},
	{"bad key", "{\n\"a\": 1,\n b: 2}", formattest.Malformed(3, "object: invalid JSON: invalid character 'b'")},
	{"missing colon", "{\n\"a\" 1}", formattest.Malformed(2, "a: invalid JSON: expected colon after object key")},
	{"trailing comma", "[\n1,\n]", formattest.Malformed(3, "element: invalid JSON: invalid character ']'")},
	{"wrong closer", "[\n1,\n2\n}", formattest.Malformed(4, "array: invalid JSON: invalid character '}' after array element")},
	{"later value over lines", bigArray(3, ",\n{\n\"i\":\n\ntru}\n]"), formattest.Malformed(8, "element: invalid JSON")},
	// The scanner's count happens to equal the value's offset here.
	{"count equals offset", "[\n\n{\nx}]", formattest.Malformed(4, "element: invalid JSON: invalid character 'x' looking for beginning of object key string")},
	{"later key", "{\"a\": 1,\n\"b\": 2,\n\"c\\q\": 3}", formattest.Malformed(3, "object: invalid JSON: invalid character 'q' in string escape code")},
	{"far into the file", bigArray(5000, ",\n{\"i\": tru}\n]"), formattest.Malformed(5002, "element: invalid JSON")},
	{"far, between values", bigArray(5000, "\n{}]"), formattest.Malformed(5002, "expected comma after array element")},
	// Documents that end early point at the last line there is.
	{"cut between elements", "[\n1,\n2,\n", formattest.Malformed(4, "element: the JSON document ends early")},
	{"cut in a string", "[\n\"abc", formattest.Malformed(2, "element: the JSON document ends early")},
	{"cut after a key", "{\"a\":", formattest.Malformed(1, "a: the JSON document ends early")},
	{"cut after the bracket", "[", formattest.Malformed(1, "array: the JSON document ends early")},
	{"cut far into the file", bigArray(3000, ",\n{\"i\": "), formattest.Malformed(3002, "element: the JSON document ends early")},
	// Bytes that are not UTF-8 are refused at the line of the value.
	{"not UTF-8", "[\n1,\n{\"a\":\n\"\xff\"}]", formattest.Malformed(3, "element: not valid UTF-8")},
	{"not UTF-8 in a member", "{\"a\": 1,\n\"b\": [\"\xc3\x28\"]}", formattest.Malformed(2, "b: not valid UTF-8")},
	{"not UTF-8 far into the file", bigArray(4000, ",\n\"\xfe\"]"), formattest.Malformed(4002, "element: not valid UTF-8")},
	// Trailing data.
	{"a second document", "[\n1\n]\n\n{}", formattest.Malformed(5, "unexpected data after the document")},
	{"trailing garbage", "\n\n[1]\n\n]", formattest.Malformed(5, "after the document: invalid JSON")},
	{"empty", "", formattest.Malformed(0, "the file is empty")},
	{"only whitespace", " \n\t\r\n", formattest.Malformed(0, "the file is empty")},
}

func TestErrorLines(t *testing.T) {
	for _, tt := range bad {
		for rname, r := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				formattest.CheckError(t, walk(jsondoc.New(r(tt.src))), tt.want)
			})
		}
	}
}

func TestTruncatedHasHint(t *testing.T) {
	var e *trajectory.Error
	if err := walk(jsondoc.New(strings.NewReader("[1,"))); !errors.As(err, &e) || !strings.Contains(e.Hint, "truncated") {
		t.Errorf("got %v, want a hint that the file is truncated", err)
	}
}

func TestGoodDocuments(t *testing.T) {
	for _, src := range []string{"[]", "{}", " [1, {\"a\": [2]}, \"x\"] \n", "{\"a\": 1, \"b\": {}}\n\n", bigArray(3000, "]")} {
		for rname, r := range readers {
			if err := walk(jsondoc.New(r(src))); err != nil {
				t.Errorf("%.20q read %s: %v", src, rname, err)
			}
		}
	}
}

// A failing reader is not the file's fault: its error comes back as it was.
func TestReaderErrorPassesThrough(t *testing.T) {
	boom := errors.New("disk on fire")
	err := walk(jsondoc.New(io.MultiReader(strings.NewReader("[1,\n"), iotest.ErrReader(boom))))
	var te *trajectory.Error
	if !errors.Is(err, boom) || errors.As(err, &te) {
		t.Errorf("got %v (%T), want the reader's error", err, err)
	}
}

func TestDelim(t *testing.T) {
	d := jsondoc.New(strings.NewReader("{\n\"h\": \"x\"}"))
	if err := d.Delim('{', "top"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Key("top"); err != nil {
		t.Fatal(err)
	}
	formattest.CheckError(t, d.Delim('[', "h"), formattest.Malformed(2, `h: expected "[", found a string`))
}

func TestRawAndSpan(t *testing.T) {
	src := "[ 12 ,\n \"ab\" ,{\"k\":\n[]} ]"
	d := jsondoc.New(strings.NewReader(src))
	if err := d.Delim('[', "array"); err != nil {
		t.Fatal(err)
	}
	type value struct {
		Raw        string
		Line       int
		Start, End int64
	}
	var got []value
	for d.More() {
		raw, line, err := d.Raw("element")
		if err != nil {
			t.Fatal(err)
		}
		start, end := d.Span()
		if off := d.Offset(); off != end {
			t.Errorf("Offset() = %d right after a value ending at %d", off, end)
		}
		got = append(got, value{string(raw), line, start, end})
	}
	want := []value{{"12", 1, 2, 4}, {`"ab"`, 2, 8, 12}, {"{\"k\":\n[]}", 2, 14, 23}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, v := range got {
		if src[v.Start:v.End] != v.Raw {
			t.Errorf("span %d-%d is %q, not %q", v.Start, v.End, src[v.Start:v.End], v.Raw)
		}
	}
	if err := d.Delim(']', "array"); err != nil {
		t.Fatal(err)
	}
	if err := d.End("the array"); err != nil {
		t.Fatal(err)
	}
}

var records = jsondoc.Records{Key: "items", Object: "the box", Expected: "a box of items", Missing: `the box has no "items"`}

func TestOpenRecords(t *testing.T) {
	good := []struct{ name, src string }{
		{"array", "[1, 2]"},
		{"object", `{"a": {"b": [1]}, "items": [1, 2], "z": 0}`},
		{"object, key first", `{"items": [1, 2]}`},
	}
	for _, tt := range good {
		d, err := jsondoc.OpenRecords(strings.NewReader(tt.src), records)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for d.More() {
			raw, _, err := d.Raw("item")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(raw))
		}
		if d := cmp.Diff([]string{"1", "2"}, got); d != "" {
			t.Errorf("%s: records (-want +got):\n%s", tt.name, d)
		}
	}
	refused := []struct {
		name, src string
		want      formattest.Refusal
	}{
		{"scalar", "42", formattest.Malformed(1, "expected a box of items, found a number")},
		{"no key", `{"a": 1}`, formattest.Malformed(1, `the box has no "items"`)},
		{"not an array", "{\n\"items\": {}}", formattest.Malformed(2, `items: expected "[", found an object`)},
		{"bad member before", "{\"a\": \"\xff\",\n\"items\": []}", formattest.Malformed(1, "a: not valid UTF-8")},
		{"bad key", "{\"a\": 1,\nb}", formattest.Malformed(2, "the box: invalid JSON")},
		{"empty", "", formattest.Malformed(1, "start of file: the JSON document ends early")},
	}
	for _, tt := range refused {
		_, err := jsondoc.OpenRecords(strings.NewReader(tt.src), records)
		formattest.CheckError(t, err, tt.want)
	}
}

func TestKinds(t *testing.T) {
	tokens := []struct {
		tok  json.Token
		want string
	}{
		{json.Delim('{'), "an object"}, {json.Delim('['), "an array"}, {json.Delim('}'), `"}"`},
		{"s", "a string"}, {1.5, "a number"}, {json.Number("2"), "a number"}, {true, "a boolean"}, {nil, "null"},
	}
	for _, tt := range tokens {
		if got := jsondoc.TokenKind(tt.tok); got != tt.want {
			t.Errorf("TokenKind(%#v) = %q, want %q", tt.tok, got, tt.want)
		}
	}
	values := map[string]string{
		`{"a":1}`: "an object", `[1]`: "an array", `"s"`: "a string", `-2e3`: "a number",
		`true`: "a boolean", `false`: "a boolean", `null`: "null", ``: "null",
	}
	for src, want := range values {
		if got := jsondoc.Kind(gjson.Parse(src)); got != want {
			t.Errorf("Kind(%s) = %q, want %q", src, got, want)
		}
	}
}

func TestFirst(t *testing.T) {
	tests := []struct {
		head  string
		first byte
		rest  string
	}{
		{"", 0, ""},
		{" \t\r\n", 0, ""},
		{"\ufeff\n [1]", '[', "[1]"},
		{"{\"a\"", '{', "{\"a\""},
		{"\xff[", 0xff, "\xff["},
	}
	for _, tt := range tests {
		first, rest := jsondoc.First([]byte(tt.head))
		if first != tt.first || !bytes.Equal(rest, []byte(tt.rest)) {
			t.Errorf("First(%q) = %q, %q; want %q, %q", tt.head, first, rest, tt.first, tt.rest)
		}
	}
}
