package relocate

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestString(t *testing.T) {
	p := Paths{From: "/w/repo", To: "/sandbox/ws"}
	for _, tc := range []struct{ in, want string }{
		{"/w/repo", "/sandbox/ws"},
		{"cd /w/repo && ls /w/repo/src", "cd /sandbox/ws && ls /sandbox/ws/src"},
		{`"/w/repo"`, `"/sandbox/ws"`},
		{"<cwd>/w/repo</cwd>", "<cwd>/sandbox/ws</cwd>"},
		{"/w/repo2 /w/repo.tar /w/repo_x", "/w/repo2 /w/repo.tar /w/repo_x"},
		{"/x/w/repo and x/w/repo", "/x/w/repo and x/w/repo"},
		{"/w/repo:/w/repo", "/sandbox/ws:/sandbox/ws"},
		{"nothing here", "nothing here"},
		{"/w/repoé", "/w/repoé"},
		{"ran in /w/repo. Then /w/repo.", "ran in /sandbox/ws. Then /sandbox/ws."},
		{"/w/repo.tar.gz /w/repo...x", "/w/repo.tar.gz /w/repo...x"},
	} {
		if got := p.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (Paths{From: "/a", To: "/a"}).String("/a/b"); got != "/a/b" || (Paths{}).Active() {
		t.Error("an identity or empty mapping must change nothing")
	}
	if r := p.Reverse(); r.String("/sandbox/ws/x") != "/w/repo/x" {
		t.Error("Reverse does not map back")
	}
}

func TestJSON(t *testing.T) {
	p := Paths{From: "/w/repo", To: "/sandbox/wé"}
	for _, tc := range []struct {
		name, in, want string
		changed        bool
	}{
		{"values and keys", `{"cwd":"/w/repo","roots":{"/w/repo":{"n":1}},"n":[1,2.50,true,null]}`,
			`{"cwd":"/sandbox/wé","roots":{"/sandbox/wé":{"n":1}},"n":[1,2.50,true,null]}`, true},
		{"escaped string changes, others keep their bytes", `{"a":"cd /w/repo\n\u00e9\"","b":"\u00e9 \/x","c":"\u0001"}`,
			`{"a":"cd /sandbox/wé\né\"","b":"\u00e9 \/x","c":"\u0001"}`, true},
		{"control characters the serde way", `{"a":"/w/repo\u0001\t"}`, `{"a":"/sandbox/wé\u0001\t"}`, true},
		{"no match keeps the document", `{"a" : "/w/repo2" }`, `{"a" : "/w/repo2" }`, false},
		{"no probe", `{"a":"x"}`, `{"a":"x"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := p.JSON([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || changed != tc.changed {
				t.Errorf("got %s (changed %v), want %s (%v)", got, changed, tc.want, tc.changed)
			}
		})
	}
}

// mapStrings applies f to every string and key of a decoded JSON value. It
// reports false when two keys of an object map to one: which value survives
// then depends on the document's order, which a decoded map no longer has.
func mapStrings(v any, f func(string) string) (any, bool) {
	switch x := v.(type) {
	case string:
		return f(x), true
	case []any:
		for i := range x {
			var ok bool
			if x[i], ok = mapStrings(x[i], f); !ok {
				return nil, false
			}
		}
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			if _, dup := m[f(k)]; dup {
				return nil, false
			}
			var ok bool
			if m[f(k)], ok = mapStrings(e, f); !ok {
				return nil, false
			}
		}
		return m, true
	}
	return v, true
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"cwd":"/w/repo","a":["/w/repo/x","/w/repo2"],"/w/repo":"\u00e9\n"}`), "/w/repo", "/t")
	f.Add([]byte(`"/w/repo"`), "/w/repo", "/w/repo/inner")
	f.Add([]byte(`[1,{"k":"v"}]`), "v", "\"")
	f.Fuzz(func(t *testing.T, doc []byte, from, to string) {
		var in any
		if json.Unmarshal(doc, &in) != nil || !utf8.ValidString(from) || !utf8.ValidString(to) {
			return // JSON strings cannot carry invalid UTF-8; it becomes U+FFFD
		}
		p := Paths{From: from, To: to}
		out, _, err := p.JSON(doc)
		if err != nil {
			t.Fatalf("valid JSON rejected: %v", err)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		want, ok := mapStrings(in, p.String)
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("relocated value differs:\n%s", cmp.Diff(want, got))
		}
	})
}

// TestReverseUnknownCwd: without a recorded cwd nothing was mapped, so
// nothing is mapped back (the workspace path must not become "").
func TestReverseUnknownCwd(t *testing.T) {
	p := Paths{From: "", To: "/ws"}
	if r := p.Reverse(); r.Active() || r.String("cd /ws && ls") != "cd /ws && ls" {
		t.Errorf("Reverse of %+v = %+v", p, r)
	}
	if r := (Paths{From: "/rec", To: "/ws"}).Reverse(); r.From != "/ws" || r.To != "/rec" {
		t.Errorf("Reverse = %+v", r)
	}
}
