package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// A Read with a limit of a file over the whole-file cap streams the window:
// the same text as the whole-file path for the same lines, the full line
// count, and no allocation of the file (a 20 GB sparse file of one line is
// refused as a pvisor error, quickly).
func TestReadWindowOfLargeFile(t *testing.T) {
	ws := t.TempDir()
	var big strings.Builder
	big.WriteString("\ufeff")
	for i := 1; i <= 40000; i++ {
		fmt.Fprintf(&big, "line %d\r\n", i)
	}
	small := strings.Join(strings.SplitAfter(big.String(), "\n")[:20], "")
	for name, content := range map[string]string{"big.txt": big.String(), "small.txt": small} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if big.Len() <= readMaxBytes {
		t.Fatalf("big.txt is %d bytes, not over the %d cap", big.Len(), readMaxBytes)
	}
	sparse := filepath.Join(ws, "sparse.txt")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 20<<30); err != nil {
		t.Fatal(err)
	}
	sess, err := New().NewToolSession(trajectory.ToolEnv{Workspace: ws, OriginalCwd: ws, LogDir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	read := func(i int, file string, offset, limit int) (trajectory.Fresh, error) {
		args, _ := json.Marshal(map[string]any{"file_path": filepath.Join(ws, file), "offset": offset, "limit": limit})
		return sess.Execute(context.Background(), 1, &trajectory.ToolCall{ID: fmt.Sprintf("toolu_%02d", i), Name: "Read", Arguments: args})
	}
	for i, w := range []struct{ offset, limit int }{{1, 3}, {5, 4}} {
		want, err := read(2*i, "small.txt", w.offset, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read(2*i+1, "big.txt", w.offset, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != want.Content || got.IsError {
			t.Errorf("window %v: streamed %q, whole-file path %q", w, got.Content, want.Content)
		}
		if !strings.Contains(string(got.Native), `"totalLines":40001`) {
			t.Errorf("window %v: native %s, want totalLines 40001", w, got.Native)
		}
	}
	if _, err := read(9, "sparse.txt", 1, 5); run.KindOf(err) != run.TooLarge {
		t.Errorf("20 GB one-line sparse file: %v, want a TooLarge pvisor error", err)
	}
}
