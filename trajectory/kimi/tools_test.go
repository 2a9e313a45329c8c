package kimi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// TestTools runs each re-run tool once in a scratch workspace and checks
// the raw result shapes Kimi Code 2.1.0 writes (the recording pins the
// successful ones; these are the failure and edge shapes).
func TestTools(t *testing.T) {
	ws := t.TempDir()
	ts, err := New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: "/rec",
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	call := func(name, args string) trajectory.Fresh {
		t.Helper()
		fr, err := ts.Execute(context.Background(), 1, &trajectory.ToolCall{ID: "c", Name: name, Arguments: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	norm := New().(interface{ NormalizeObservation(string) string }).NormalizeObservation
	cases := []struct{ name, args, want string }{
		{"Write", `{"path":"/rec/a.txt","content":"x\ny\n"}`, "Wrote 4 bytes to /rec/a.txt"},
		{"Write", `{"path":"a.txt","content":"z\n","mode":"append"}`, "Appended 2 bytes to a.txt"},
		{"Read", `{"path":"a.txt"}`, "1\tx\n2\ty\n3\tz\n<system>3 lines read from file starting from line 1. Total lines in file: 3. Requested range complete. Effective max_chars: 100000. End of file reached.</system>"},
		{"Edit", `{"path":"a.txt","old_string":"y","new_string":"Y"}`, "Replaced 1 occurrence in a.txt"},
		{"Bash", `{"command":"cat a.txt; exit 3"}`, "Wall time: <masked> seconds\n<system>ERROR: Tool execution failed.</system>\nx\nY\nz\nCommand failed with exit code: 3."},
		{"Bash", `{"command":"exit 2"}`, "Wall time: <masked> seconds\n<system>ERROR: Tool execution failed.</system>\nProcess exited with code 2\nCommand failed with exit code: 2."},
		{"Bash", `{"command":"true"}`, "Wall time: <masked> seconds\nCommand executed successfully."},
		{"Read", `{"path":"missing.txt"}`, "<system>ERROR: Tool execution failed.</system>\nmissing.txt does not exist"},
	}
	for _, c := range cases {
		if got := norm(call(c.name, c.args).Content); got != c.want {
			t.Errorf("%s %s:\n got %q\nwant %q", c.name, c.args, got, c.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(data) != "x\nY\nz\n" {
		t.Errorf("a.txt = %q", data)
	}
}
