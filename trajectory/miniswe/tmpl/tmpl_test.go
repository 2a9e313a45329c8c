package tmpl

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "re-render testdata/golden.json with the real jinja2 (needs PVISOR_E2E_DIR's mini-swe-agent venv)")

type golden struct {
	Name     string         `json:"name"`
	Template string         `json:"template"`
	Vars     map[string]any `json:"vars"`
	Want     *string        `json:"want"`
	Error    string         `json:"error"`
}

// TestGolden renders every observation and format-error template of
// mini-swe-agent 1.17.5's and 2.4.6's bundled configs, plus edge cases,
// and compares with what jinja2 itself rendered (testdata/golden.json).
func TestGolden(t *testing.T) {
	if *update {
		regenerate(t)
	}
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cases []golden
	if err := dec.Decode(&cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tp, err := Parse(c.Template)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := tp.Render(FromJSON(c.Vars).(map[string]any))
			switch {
			case c.Error != "":
				if err == nil {
					t.Errorf("rendered %q; jinja2 raised %s", got, c.Error)
				}
			case err != nil:
				t.Errorf("render: %v", err)
			case got != *c.Want:
				t.Errorf("got\n%q\nwant\n%q", got, *c.Want)
			}
		})
	}
}

func regenerate(t *testing.T) {
	dir := os.Getenv("PVISOR_E2E_DIR")
	matches, _ := filepath.Glob(filepath.Join(dir, "py", "mini-swe-agent@*", "bin", "python"))
	if dir == "" || len(matches) == 0 {
		t.Fatal("-update needs PVISOR_E2E_DIR with a mini-swe-agent venv (testdata/e2e/install-clis.sh mini-swe-agent)")
	}
	out, err := exec.Command(matches[len(matches)-1], "testdata/gen.py", "testdata/cases.json", "testdata/golden.json").CombinedOutput()
	if err != nil {
		t.Fatalf("gen.py: %v\n%s", err, out)
	}
}

// TestUnsupported: constructs outside the subset are refused when parsed,
// with a message naming them, never rendered approximately.
func TestUnsupported(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{"{% for x in y %}{{x}}{% endfor %}", "{% for %} is not supported"},
		{"{{ x | upper }}", `filter "upper" is not supported`},
		{"{{ x | truncate(3) }}", `filter "truncate" is not supported`},
		{"{{ f(x) }}", "calling f() is not supported"},
		{"{{ x is string }}", `test "string" is not supported`},
		{"{{ 1.5 }}", "only integers"},
		{"{{ x[::2] }}", ""},
		{"{% if x %}a", "never closed"},
		{"a{% endif %}", "without a matching"},
		{"{{ x", "never closed"},
		{"{%+ if x %}{% endif %}", "whitespace marker"},
		{"{{ 'a\\n' }}", "backslash"},
		// mini 2.4.6's programbench observation template counts wall time,
		// which a replay cannot reproduce anyway.
		{"{{ ((wall_time_limit_seconds - elapsed_seconds) / 60) | int }}", "unsupported character '/'"},
	} {
		_, err := Parse(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.src, err, tc.err)
		}
	}
}

// TestStrictUndefined: an undefined variable fails the render (jinja2's
// StrictUndefined) unless only tested with "is defined".
func TestStrictUndefined(t *testing.T) {
	tp, err := Parse("{% if y is defined %}{{y}}{% else %}none{% endif %}{{ x.missing }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Render(map[string]any{"x": map[string]any{}}); err == nil || !strings.Contains(err.Error(), "no attribute missing") {
		t.Errorf("err = %v", err)
	}
	if _, err := tp.Render(nil); err == nil || !strings.Contains(err.Error(), `"x" is undefined`) {
		t.Errorf("err = %v", err)
	}
}
