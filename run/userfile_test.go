package run

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadUserFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	fifo := filepath.Join(dir, "fifo")
	if err := os.WriteFile(small, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 11), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A prompt file pointing at /etc/shadow (issue 24): a symlink is refused.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{small, ""},
		{big, "--x " + big + ": refusing a test file " + big + ": 11 bytes, over the 10-byte limit"},
		{link, "--x " + link + ": refusing a test file " + link + ": it is a symlink; pass the file it points to"},
		{fifo, "; pass a text file"}, // refused before it is opened: a read would hang
		{dir, "; pass a text file"},
		{"/dev/zero", "; pass a text file"},
		{filepath.Join(dir, "missing"), "; pass a text file"},
	} {
		data, err := ReadUserFile("--x", c.path, 10, "a test file", "pass a text file")
		if c.want == "" {
			if err != nil || string(data) != "abc" {
				t.Errorf("%s: %q, %v", c.path, data, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--x ") {
			t.Errorf("%s: err = %v, want it to contain %q", c.path, err, c.want)
		}
	}
}
