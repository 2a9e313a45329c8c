package userfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		p    Policy
		want string
	}{
		{fifo, Policy{What: "session file"}, "refusing session file " + fifo + ": not a regular file (a named pipe)"},
		{"/dev/zero", Policy{}, "not a regular file (a character device)"},
		{dir, Policy{}, "not a regular file (a directory)"},
		{link, Policy{What: "prompt file"}, "refusing prompt file " + link + ": it is a symlink"},
		{reg, Policy{Max: 4}, "5 bytes, over the 4-byte limit"},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := ReadAll(c.path, c.p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !IsRefusal(err) {
				t.Errorf("ReadAll(%s) = %v, want a refusal containing %q", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadAll(%s) blocked", c.path)
		}
	}
	for _, p := range []Policy{{Max: 5}, {FollowSymlinks: true}} {
		path := reg
		if p.FollowSymlinks {
			path = link
		}
		if b, err := ReadAll(path, p); err != nil || string(b) != "12345" {
			t.Errorf("ReadAll(%s, %+v) = %q, %v", path, p, b, err)
		}
	}
}

func TestReaderRefusesGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Policy{Max: 3}
	f, _, err := Open(path, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(path, []byte("abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	r := Reader(f, p)
	n, _ := r.Read(buf)
	if _, err := r.Read(buf[n:]); err == nil || !strings.Contains(err.Error(), "grew past the 3-byte limit") {
		t.Fatalf("read past the cap: %v", err)
	}
}
