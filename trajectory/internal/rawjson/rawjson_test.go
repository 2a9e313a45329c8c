package rawjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

type pair struct{ K, V gjson.Result }

// walk lists what iterating t yields at every level, depth first.
func walk(t gjson.Result, each func(gjson.Result, func(k, v gjson.Result) bool)) []pair {
	var out []pair
	each(t, func(k, v gjson.Result) bool {
		out = append(out, pair{k, v})
		if v.Type == gjson.JSON {
			out = append(out, walk(v, each)...)
		}
		return true
	})
	return out
}

func gjsonEach(t gjson.Result, fn func(k, v gjson.Result) bool) { t.ForEach(fn) }

// checkSame requires Each to yield exactly what gjson's ForEach yields, at
// every level of doc, which must be valid JSON.
func checkSame(t *testing.T, doc string) {
	t.Helper()
	for _, root := range []gjson.Result{gjson.Parse(doc), gjson.Get(doc, "@this")} {
		want, got := walk(root, gjsonEach), walk(root, Each)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("Each differs from gjson ForEach on %q (-gjson +Each):\n%s", doc, d)
		}
	}
}

func TestEachMatchesGJSON(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `[1,2,3]`, `"s"`, `12`, `true`, `null`,
		`{"a" : "x" , "b":[1, {"c":null}] ,"d":true,"e":false,"f":-1.5e3}`,
		`{"esc":"a\"b\\","q":"\\\"","u":"\u00e9\ud83d\ude00\ud800x\udc00\ud800\ud800\u0041","s":"\/\b\f\n\r\t"}`,
		`{"k\"ey":"v","k\u0041":{"n":[[],[[]],{}]}}`,
		"{\"a\":\"multi\u00e9byte \u2028\",\n\t\"b\" :\r\n 0}",
		`[{"a":"}"},"]","[{",{"x":"\\"}]`,
	} {
		checkSame(t, doc)
	}
}

// checkSameOf requires EachOf to yield what Each yields for the keys asked
// for, at every level of doc.
func checkSameOf(t *testing.T, doc string, keys []string) {
	t.Helper()
	of := func(r gjson.Result, fn func(k, v gjson.Result) bool) { EachOf(r, keys, fn) }
	filtered := func(r gjson.Result, fn func(k, v gjson.Result) bool) {
		Each(r, func(k, v gjson.Result) bool {
			if r.IsObject() && !slices.Contains(keys, k.Str) {
				return true
			}
			return fn(k, v)
		})
	}
	if d := cmp.Diff(walk(gjson.Parse(doc), filtered), walk(gjson.Parse(doc), of)); d != "" {
		t.Fatalf("EachOf(%q) differs from a filtered Each on %q (-Each +EachOf):\n%s", keys, doc, d)
	}
}

var someKeys = [][]string{{"type", "content", "id"}, {"a", "kA", "k\"ey"}, {}}

func TestEachOf(t *testing.T) {
	for _, doc := range []string{`{"a":1,"b":"x\\","kA":[{"a":"y\u0041"},2],"k\u0041":3}`, `[{"a":1},{"b":2}]`, `{"b":{"a":[1,{"a":null}]},"a":true}`} {
		for _, keys := range someKeys {
			checkSameOf(t, doc, keys)
		}
	}
}

// checkSameNested requires EachOfNested to yield, at the top of doc, what
// EachOf yields, and for the inner member what EachOf yields on it, inner
// members first.
func checkSameNested(t *testing.T, doc string, keys []string, inner string, innerKeys []string) {
	t.Helper()
	collect := func(dst *[]pair) func(k, v gjson.Result) bool {
		return func(k, v gjson.Result) bool { *dst = append(*dst, pair{k, v}); return true }
	}
	var want, got []pair
	EachOf(gjson.Parse(doc), keys, func(k, v gjson.Result) bool {
		if k.Str == inner && v.IsObject() {
			EachOf(v, innerKeys, collect(&want))
		}
		want = append(want, pair{k, v})
		return true
	})
	for _, root := range []gjson.Result{gjson.Parse(doc), gjson.Get(doc, "@this")} {
		got = got[:0]
		EachOfNested(root, keys, inner, innerKeys, collect(&got), collect(&got))
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("EachOfNested(%q, %q) differs from EachOf twice on %q (-EachOf +EachOfNested):\n%s", keys, inner, doc, d)
		}
	}
}

func TestEachOfNested(t *testing.T) {
	for _, doc := range []string{
		`{"type":"tool_use","part":{"type":"tool","state":{"output":"a\"}b"},"callID":"c"},"sessionID":"s"}`,
		`{"part" : { } , "type":"x"}`, `{"part":[1,{"a":2}],"type":"x"}`, `{"part":"str","part":{"a":1}}`,
		`{"a":{"part":{"type":1}}}`, `{}`, `[{"part":{}}]`, `{"part":{"type":"t","sessionID":{"x":"}"}}}`,
	} {
		checkSameNested(t, doc, []string{"type", "part", "sessionID"}, "part", []string{"type", "sessionID", "state"})
		checkSameNested(t, doc, []string{"part"}, "part", nil)
	}
	// An innerFn that stops early still leaves the outer walk whole.
	var outer []string
	EachOfNested(gjson.Parse(`{"part":{"a":1,"b":2},"z":3}`), []string{"part", "z"}, "part", nil,
		func(k, v gjson.Result) bool { outer = append(outer, k.Str+"="+v.Raw); return true },
		func(k, v gjson.Result) bool { return false })
	if d := cmp.Diff([]string{`part={"a":1,"b":2}`, "z=3"}, outer); d != "" {
		t.Errorf("outer members after an early inner stop (-want +got):\n%s", d)
	}
}

// TestEachCorpus compares every line of every JSONL sample in the tree.
func TestEachCorpus(t *testing.T) {
	files, _ := filepath.Glob("../../../testdata/trajectories/*/*.jsonl")
	more, _ := filepath.Glob("../../*/testdata/*.jsonl")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found only %d sample files", len(files))
	}
	lines := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Longer lines add nothing new and make the race build slow.
		for l := range strings.Lines(string(data)) {
			if len(l) <= 16<<10 && json.Valid([]byte(l)) {
				checkSame(t, l)
				checkSameOf(t, l, someKeys[0])
				checkSameNested(t, l, []string{"type", "part", "message", "payload"}, "part", someKeys[0])
				checkSameNested(t, l, []string{"type", "part", "message", "payload"}, "message", someKeys[0])
				lines++
			}
		}
	}
	t.Logf("%d lines of %d files", lines, len(files))
}

// TestEachInvalid only requires Each to stay in bounds and stop on input
// that is not JSON.
func TestEachInvalid(t *testing.T) {
	for _, doc := range []string{`{"a`, `{"a":`, `{"a":"\`, `[1,`, `{"a":{"b":[`, `{"a":"\u12"}`, `{"a" 1}`, `{1:2}`, `["\ud800\u`} {
		walk(gjson.Parse(doc), Each)
	}
}

func FuzzEach(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\"",{"b":null}]}`, `["\ud83d\ude00",true]`, `{"k":"\\\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			walk(gjson.Parse(doc), Each)
			return
		}
		checkSame(t, doc)
		for _, keys := range someKeys {
			checkSameOf(t, doc, keys)
		}
		checkSameNested(t, doc, []string{"a", "k"}, "a", someKeys[0])
	})
}

func BenchmarkEach(b *testing.B) {
	data, err := os.ReadFile("../../../testdata/trajectories/claude-code/ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
	if err != nil {
		b.Skip(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	for _, tc := range []struct {
		name string
		each func(gjson.Result, func(k, v gjson.Result) bool)
	}{{"gjson-baseline", gjsonEach}, {"rawjson", Each}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for _, l := range lines {
					count(gjson.Parse(string(l)), tc.each)
				}
			}
		})
	}
}

// count visits every value at every level, as a decoder reading all of a
// line would, without allocating.
func count(t gjson.Result, each func(gjson.Result, func(k, v gjson.Result) bool)) int {
	n := 0
	each(t, func(k, v gjson.Result) bool {
		n++
		if v.Type == gjson.JSON {
			n += count(v, each)
		}
		return true
	})
	return n
}
