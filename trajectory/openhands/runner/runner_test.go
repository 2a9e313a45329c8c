package runner

import (
	"regexp"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolKinds: the tools pvisor lets through (ToolKinds, checked before
// anything runs) are the ones runner.py can build, its TOOL_MODULES plus
// the agent's built-in finish and think.
func TestToolKinds(t *testing.T) {
	modules := regexp.MustCompile(`(?s)TOOL_MODULES = \{(.*?)\n\}`).FindSubmatch(Script)
	builtin := regexp.MustCompile(`BUILTIN = \{(.*?)\}`).FindSubmatch(Script)
	if modules == nil || builtin == nil {
		t.Fatal("runner.py has no TOOL_MODULES or BUILTIN table")
	}
	var py []string
	for _, m := range regexp.MustCompile(`"(\w+Tool)"`).FindAllSubmatch(append(modules[1], builtin[1]...), -1) {
		py = append(py, string(m[1]))
	}
	var goKinds []string
	for k := range ToolKinds {
		goKinds = append(goKinds, k)
	}
	sort.Strings(py)
	sort.Strings(goKinds)
	if d := cmp.Diff(goKinds, py); d != "" {
		t.Errorf("ToolKinds and runner.py disagree (-go +py):\n%s", d)
	}
}
