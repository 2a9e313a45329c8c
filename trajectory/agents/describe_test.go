package agents

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each agent's Describe (the line 'pvisor session --help' prints for it)
// names the state directory its store really uses under --home, so the
// help cannot drift from the code.
func TestDescribeNamesTheStore(t *testing.T) {
	names := RewriterAgents()
	if len(names) == 0 {
		t.Fatal("no agent has a session rewriter")
	}
	for _, name := range names {
		rw, _ := Rewriter(name)
		d := rw.Describe()
		if !strings.Contains(d, "rewrite") {
			t.Errorf("%s: Describe %q does not say what rewrite replaces", name, d)
		}
		st, ok := Sessions(name)
		if !ok {
			st, ok = Resumable(name)
		}
		if !ok {
			continue
		}
		root, err := st.Root("/H", func(string) string { return "" })
		if err != nil {
			t.Fatalf("%s: Root: %v", name, err)
		}
		rel, _ := filepath.Rel("/H", root)
		if want := "<home>/" + rel; !strings.Contains(d, want) {
			t.Errorf("%s: Describe %q does not name %s, where its store is", name, d, want)
		}
	}
}
