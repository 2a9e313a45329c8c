package tested

import (
	"strings"
	"testing"
)

func TestRange(t *testing.T) {
	r := Range{Min: "0.150.0", Max: "0.171.0"}
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"0.150.0", true}, {"0.160.2", true}, {"0.171.0", true}, {"v0.171.0", true}, {"0.171.0+build.7", true},
		{"0.149.9", false}, {"0.171.1", false}, {"0.172.0-alpha.1", false}, {"0.171.0-rc.1", true},
		{"0.150.0-rc.1", false}, {"1.0.0", false},
	} {
		got, err := r.Contains(tc.v)
		if err != nil || got != tc.want {
			t.Errorf("%s in %s = %v (%v), want %v", tc.v, r, got, err, tc.want)
		}
	}
	if _, err := r.Contains("latest"); err == nil {
		t.Error("a non-version was compared")
	}
	if ok, err := (Range{}).Contains("1.0.0"); ok || err != nil {
		t.Errorf("the empty range contains 1.0.0 (%v)", err)
	}
	if comparePre("alpha.2", "alpha.10") >= 0 || comparePre("1", "alpha") >= 0 || comparePre("alpha", "alpha.1") >= 0 {
		t.Error("pre-release order is not semver's")
	}
	for r, want := range map[Range]string{{"1.0.0", "1.0.0"}: "=1.0.0", {"1.0.0", "1.2.0"}: ">=1.0.0 <=1.2.0", {}: "(none tested)"} {
		if r.String() != want {
			t.Errorf("%#v prints %q, want %q", r, r.String(), want)
		}
	}
}

// TestVersionsFile holds versions.txt to what the install script and the
// e2e matrix rely on: every supported CLI agent listed, one package and
// binary per agent, no version twice.
func TestVersionsFile(t *testing.T) {
	seen := map[string]bool{}
	pkg, bin := map[string]string{}, map[string]string{}
	for _, r := range Releases() {
		key := r.Agent + "@" + r.Version
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		if p, ok := pkg[r.Agent]; ok && p != r.Package && !moved(r.Agent, p, r.Package) {
			t.Errorf("%s is listed with packages %s and %s, and no successor line says it moved", r.Agent, p, r.Package)
		}
		if b, ok := bin[r.Agent]; ok && b != r.Binary {
			t.Errorf("%s is listed with binaries %s and %s", r.Agent, b, r.Binary)
		}
		pkg[r.Agent], bin[r.Agent] = r.Package, r.Binary
	}
	for _, a := range []string{"claude-code", "codex", "opencode", "pi", "mini-swe-agent", "openhands"} {
		if len(Of(a)) == 0 {
			t.Errorf("no tested release of %s", a)
		}
	}
	if rs := Of("claude-code"); len(rs) < 3 {
		t.Errorf("claude-code has %d tested releases; the matrix wants the oldest, the newest and one between", len(rs))
	}
}

// moved reports whether a successor line links the two packages of agent.
func moved(agent, a, b string) bool {
	for _, s := range Successors() {
		if s.Agent == agent && (s.From == a && s.To == b || s.From == b && s.To == a) {
			return true
		}
	}
	return false
}

// TestSuccessors: a successor line records a move between packages; the
// packages of an agent are its lines' and its moves'.
func TestSuccessors(t *testing.T) {
	rs, ss, err := ParseFile("p @old/p 0.73.1 p\np @new/p 1.6.0 p node>=22.19\nsuccessor p @old/p @new/p\nsuccessor q @a/q @b/q\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[1].Node != "22.19" || rs[0].Node != "" || len(ss) != 2 || ss[0] != (Successor{"p", "@old/p", "@new/p"}) {
		t.Errorf("ParseFile = %+v, %+v", rs, ss)
	}
	for _, in := range []string{"successor p @a/p", "successor p @a/p @a/p", "successor p @a/p @b/p @c/p"} {
		if _, _, err := ParseFile(in); err == nil || !strings.Contains(err.Error(), "versions.txt:1") {
			t.Errorf("ParseFile(%q) = %v, want an error naming line 1", in, err)
		}
	}
	if got := strings.Join(PackagesOf("pi"), " "); got != "@mariozechner/pi-coding-agent @earendil-works/pi-coding-agent" {
		t.Errorf("PackagesOf(pi) = %s", got)
	}
	if got := strings.Join(PackagesOf("codex"), " "); got != "@openai/codex" {
		t.Errorf("PackagesOf(codex) = %s", got)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"codex @openai/codex 0.171.0", "codex @openai/codex latest codex", "a b 1.2.3 d e"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "versions.txt:1") {
			t.Errorf("Parse(%q) = %v, want an error naming line 1", in, err)
		}
	}
	rs, err := Parse("# c\n\nx p 1.10.0 x # trailing\nx p 1.9.0 x\n")
	if err != nil || len(rs) != 2 {
		t.Fatalf("Parse = %v, %v", rs, err)
	}
	if _, err := Parse("x pypi: 1.0.0 x"); err == nil || !strings.Contains(err.Error(), "names no package") {
		t.Errorf("an empty pypi: package parsed (%v)", err)
	}
}

// TestOptions: a pypi: line may name the Python it needs and packages
// installed beside it; the venv is named after the package, not the agent.
func TestOptions(t *testing.T) {
	rs, err := Parse("openhands pypi:openhands-sdk 1.58.2 openhands-sdk python>=3.12 with=openhands-tools,x.y\n")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Python != "3.12" || strings.Join(r.With, " ") != "openhands-tools x.y" || r.Path("/e") != "/e/py/openhands-sdk@1.58.2/bin/openhands-sdk" {
		t.Errorf("%+v at %s", r, r.Path("/e"))
	}
	for in, want := range map[string]string{
		"a @s/a 1.0.0 a python>=3.12":   "for pypi: packages",
		"a @s/a 1.0.0 a node>=22":       "want node>=X.Y",
		"a pypi:a 1.0.0 a node>=22.19":  "unknown option",
		"a pypi:a 1.0.0 a python>=3":    "want python>=3.N",
		"a pypi:a 1.0.0 a with=ok,$bad": "not a package name",
		"a pypi:a 1.0.0 a extras=[x]":   "unknown option",
		"a pypi:a 1.0.0 a with=":        "not a package name",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "versions.txt:1") {
			t.Errorf("Parse(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

// TestRegistries: a "pypi:" package column is a Python package installed
// into a venv; anything else is npm's. Ranges span both kinds alike.
func TestRegistries(t *testing.T) {
	rs, err := Parse("a @scope/a 1.2.0 a\nm pypi:mini-swe-agent 2.4.6 mini\nm pypi:mini-swe-agent 1.17.5 mini\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		i                  int
		pkg, registry, bin string
	}{
		{0, "@scope/a", RegistryNPM, "/e/cli/a@1.2.0/node_modules/.bin/a"},
		{1, "mini-swe-agent", RegistryPyPI, "/e/py/mini-swe-agent@2.4.6/bin/mini"},
	} {
		r := rs[tc.i]
		if r.Package != tc.pkg || r.Registry != tc.registry || r.Path("/e") != tc.bin {
			t.Errorf("line %d: %+v at %s, want package %s from %s at %s", tc.i+1, r, r.Path("/e"), tc.pkg, tc.registry, tc.bin)
		}
	}
	old := releasesOverride
	t.Cleanup(func() { releasesOverride = old })
	releasesOverride = rs
	if got := RangeOf("m").String(); got != ">=1.17.5 <=2.4.6" {
		t.Errorf("RangeOf(m) = %s", got)
	}
	if got := Of("m"); len(got) != 2 || got[0].Version != "1.17.5" {
		t.Errorf("Of(m) = %+v, want oldest first", got)
	}
}

func TestOfSortsOldestFirst(t *testing.T) {
	saved := releasesOverride
	defer func() { releasesOverride = saved }()
	releasesOverride, _ = Parse("x p 1.10.0 b\nx p 1.9.0 b\ny q 0.1.0 c\nx p 1.9.1-rc.1 b\n")
	var got []string
	for _, r := range Of("x") {
		got = append(got, r.Version)
	}
	if strings.Join(got, " ") != "1.9.0 1.9.1-rc.1 1.10.0" {
		t.Errorf("Of(x) = %v", got)
	}
	if r := RangeOf("x"); r != (Range{"1.9.0", "1.10.0"}) {
		t.Errorf("RangeOf(x) = %v", r)
	}
}
