package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Issue 24 #5: a second batch run on an output dir in use is refused,
// naming the holder, and touches nothing; shards of one count share the
// dir, a shard twice or another count is refused.
func TestOutputDirLock(t *testing.T) {
	dir := t.TempDir()
	first, err := LockOutput(dir, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(context.Background(), nil, Layout{Out: dir, State: dir + "/.batch/state"}, Options{})
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on ", os.Getpid())) ||
		!strings.Contains(err.Error(), "all runs") || !strings.Contains(err.Error(), "another --output-dir") {
		t.Fatalf("second run on a locked dir: %v", err)
	}
	if _, err := LockOutput(dir, Shard{0, 2}); !errors.As(err, &busy) {
		t.Fatalf("a shard beside an unsharded run: %v", err)
	}
	first.Release()

	a, err := LockOutput(dir, Shard{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := LockOutput(dir, Shard{1, 2})
	if err != nil {
		t.Fatalf("two shards of one count share a dir: %v", err)
	}
	defer b.Release()
	if _, err := LockOutput(dir, Shard{1, 2}); !errors.As(err, &busy) || !strings.Contains(err.Error(), "1/2") {
		t.Fatalf("shard 1/2 twice: %v", err)
	}
	if _, err := LockOutput(dir, Shard{0, 3}); !errors.As(err, &busy) || !strings.Contains(err.Error(), "use N=2") {
		t.Fatalf("a shard of another count: %v", err)
	}
	if _, err := LockOutput(dir, Shard{}); !errors.As(err, &busy) || !strings.Contains(err.Error(), "0/2") {
		t.Fatalf("an unsharded run beside shards: %v", err)
	}
}
