package claude

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/run"
)

// Files of one mtime take the recorded order; mtime order and files the
// recording does not list stay where they are.
func TestRecordedTies(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	for _, tc := range []struct {
		name     string
		files    []string // "name@0" or "name@1": the mtime
		recorded string
		want     string
	}{
		{"tie in recorded order", []string{"main.py@0", "greeter/util.py@0"}, "greeter/util.py\nmain.py", "greeter/util.py main.py"},
		{"mtime order wins", []string{"main.py@0", "greeter/util.py@1"}, "greeter/util.py\nmain.py", "main.py greeter/util.py"},
		{"new file keeps its place", []string{"a@0", "new@0", "b@0"}, "b\na", "b new a"},
		{"only within one mtime", []string{"c@0", "d@0", "a@1", "b@1"}, "d\nc\nb\na", "d c b a"},
		{"no recording", []string{"x@0", "y@0"}, "No files found", "x y"},
		{"truncation note ignored", []string{"x@0", "y@0"}, "y\nx\n(Results are truncated. Consider using a more specific path or pattern.)", "y x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []run.FileEntry
			var names []string
			for _, f := range tc.files {
				n, at, _ := strings.Cut(f, "@")
				mt := t0
				if at == "1" {
					mt = t1
				}
				files = append(files, run.FileEntry{Path: "/w/" + n, ModTime: mt})
				names = append(names, n)
			}
			recordedTies(files, names, strings.Split(tc.recorded, "\n"))
			if d := cmp.Diff(tc.want, strings.Join(names, " ")); d != "" {
				t.Errorf("names (-want +got):\n%s", d)
			}
			for i, f := range files {
				if f.Path != "/w/"+names[i] {
					t.Errorf("file %d is %s, name %s: files and names out of step", i, f.Path, names[i])
				}
			}
		})
	}
}
