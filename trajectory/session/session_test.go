package session

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// editCwd is the simplest editor: the top-level cwd.
func editCwd(from string) LineEditor {
	return func(_ int, line []byte) ([]Span, error) {
		s, ok, err := StringAt(gjson.GetBytes(line, "cwd"), from)
		if !ok {
			return nil, err
		}
		return []Span{s}, nil
	}
}

func TestRewriteLines(t *testing.T) {
	tests := []struct {
		name, in, want string
		n              int
	}{
		{"plain", `{"cwd":"/a","x":1}` + "\n", `{"cwd":"/b c","x":1}` + "\n", 1},
		{"spacing and key order kept", `{ "x" : 1 , "cwd" : "/a" }` + "\n", `{ "x" : 1 , "cwd" : "/b c" }` + "\n", 1},
		{"CRLF and blank lines", "{\"cwd\":\"/a\"}\r\n\n  \n{\"cwd\":\"/a\"}\r\n", "{\"cwd\":\"/b c\"}\r\n\n  \n{\"cwd\":\"/b c\"}\r\n", 2},
		{"blank first lines", "\n\n" + `{"cwd":"/a"}` + "\n", "\n\n" + `{"cwd":"/b c"}` + "\n", 1},
		{"empty input", "", "", 0},
		{"no final newline", `{"cwd":"/a"}`, `{"cwd":"/b c"}`, 1},
		{"only exact matches", `{"cwd":"/a/sub"}` + "\n" + `{"cwd":"/ab"}` + "\n", `{"cwd":"/a/sub"}` + "\n" + `{"cwd":"/ab"}` + "\n", 0},
		{"text mentioning it stays", `{"text":"cd /a","cwd":"/a"}` + "\n", `{"text":"cd /a","cwd":"/b c"}` + "\n", 1},
		{"torn last line", `{"cwd":"/a"}` + "\n" + `{"cwd":"/a`, `{"cwd":"/b c"}` + "\n" + `{"cwd":"/a`, 1},
		{"not JSON kept", "garbage \"cwd\":\"/a\"\n", "garbage \"cwd\":\"/a\"\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := RewriteLines(&out, strings.NewReader(tt.in), "/b c", editCwd("/a"))
			if err != nil || out.String() != tt.want || n != tt.n {
				t.Errorf("got %q, %d, %v; want %q, %d", out.String(), n, err, tt.want, tt.n)
			}
		})
	}
}

func TestRewriteLinesEscapes(t *testing.T) {
	// The new value is written as JSON.stringify spells it.
	var out bytes.Buffer
	if _, err := RewriteLines(&out, strings.NewReader(`{"cwd":"/a"}`), "/q\"\\é\n<", editCwd("/a")); err != nil {
		t.Fatal(err)
	}
	if want := `{"cwd":"/q\"\\é\n<"}`; out.String() != want {
		t.Errorf("got %s, want %s", out.String(), want)
	}
	if got := gjson.Get(out.String(), "cwd").Str; got != "/q\"\\é\n<" {
		t.Errorf("value reads back as %q", got)
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"01a22998-569d-74b2-aebf-25f39bc1a17a", "ses_dcde9ed9dffedKYacsnTgsQHbp", "a"} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "..", "a/b", "a*", "a?", "[a]", "a b", "a.jsonl", "é", "a\x00"} {
		if err := CheckID(bad); err == nil {
			t.Errorf("CheckID(%q) accepted it", bad)
		}
	}
}

// FuzzRewriteLines: any input is copied without error or panic, keeps its
// line count, and a rewrite there and back gives the input again whenever
// every matched value was spelled as JSON.stringify spells it and no line
// already held the new value.
func FuzzRewriteLines(f *testing.F) {
	for _, s := range []string{
		`{"cwd":"/a","x":1}` + "\n",
		"{\"cwd\":\"/a\"}\r\n\n{\"cwd\":\"/a\"",
		`{"cwd":"\/a"}` + "\n" + `{"cwd":"/a","cwd":"/b"}`,
		"\n\n{}\n[1]\n\"s\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out, back bytes.Buffer
		n, err := RewriteLines(&out, bytes.NewReader(data), "/b", editCwd("/a"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(out.Bytes(), []byte("\n")) != bytes.Count(data, []byte("\n")) {
			t.Fatalf("line count changed")
		}
		if n == 0 && !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("nothing replaced, yet the output differs")
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			v := gjson.GetBytes(line, "cwd")
			if v.Str == "/b" || v.Str == "/a" && v.Raw != `"/a"` {
				return // the round trip cannot be exact; see RewriteLines
			}
		}
		if _, err := RewriteLines(&back, bytes.NewReader(out.Bytes()), "/a", editCwd("/b")); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Bytes(), data) {
			t.Fatalf("round trip:\n%q\n%q", data, back.Bytes())
		}
	})
}
