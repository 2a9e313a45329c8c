package tmpl

import (
	"strings"
	"testing"
)

// Issue 24 #9: templates the parser used to accept that fail (or exhaust
// memory or stack) only when rendered, after the step's command ran, are
// refused by Parse.
func TestParseRefusesWhatCannotRender(t *testing.T) {
	for src, want := range map[string]string{
		"{{ 'x' * 1000000000 }}":    "repeating a string with * is not supported",
		"{{ 2 * 'x' }}":             "repeating a string with * is not supported",
		"{{ [1] * 3 }}":             "repeating a list with * is not supported",
		"{{ output * 1000000000 }}": "a multiplier of 1000000000 is over the 10000",
		"{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}": "nests deeper than 64 levels",
		"{{ " + strings.Repeat("not ", 1000) + "a }}":                                   "nests deeper than 64 levels",
		"{{ " + strings.Repeat("-", 1000) + "1 }}":                                      "nests deeper than 64 levels",
	} {
		if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v, want %q", src, err, want)
		}
	}
	for _, src := range []string{"{{ (a + 1) * 2 }}", "{{ a - b * 2 }}", "{{ " + strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60) + " }}"} {
		if _, err := Parse(src); err != nil {
			t.Errorf("Parse(%.40q): %v", src, err)
		}
	}
}
