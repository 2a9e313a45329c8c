package run

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpandBraces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"*.{ts,tsx}", []string{"*.ts", "*.tsx"}},
		{"{a,b}/{c,d}", []string{"a/c", "a/d", "b/c", "b/d"}},
		{"x{a,{b,c}}y", []string{"xay", "xby", "xcy"}},
		{"{single}", []string{"{single}"}}, // no comma: literal, as in bash
		{`\{a,b}`, []string{`\{a,b}`}},     // escaped
		{"{,.}env", []string{"env", ".env"}},
	}
	for _, tt := range tests {
		got, err := expandBraces(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("expandBraces(%q) (-want +got):\n%s", tt.in, d)
		}
	}
	if _, err := expandBraces(strings.Repeat("{a,b}", 13)); err == nil {
		t.Error("8192 alternatives accepted")
	}
}

func TestSegPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"src/**/*.go", "src/a.go", true},
		{"src/**", "src", false}, // a trailing ** is what is inside
		{"src/**", "src/a/b", true},
		{"a/*/c", "a/b/c", true},
		{"a/*/c", "a/b/x/c", false},
		{"*.go", "dir/a.go", false},
		{"a**b", "axxb", true}, // ** inside a name is a plain *
		{"a**b", "ax/xb", false},
		{"[!a]*", "bcd", true},
		{"[!a]*", "abc", false},
	}
	for _, tt := range tests {
		alts, err := compileSegs(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := anyMatch(alts, strings.Split(tt.path, "/")); got != tt.want {
			t.Errorf("%q ~ %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func FuzzGlobPattern(f *testing.F) {
	for _, s := range []string{"**/*.{go,ts}", "a/{b,{c,d}}/**", "[!x]?", `\{`, "{", "}{,}"} {
		f.Add(s, "a/b/c.go")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		alts, err := compileSegs(pattern)
		if err != nil {
			return
		}
		segs := strings.Split(path, "/")
		anyMatch(alts, segs)
		anyCouldMatchBelow(alts, segs)
		parseGitGlob(pattern)
	})
}
