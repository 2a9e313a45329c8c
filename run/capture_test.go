package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The log is created while the child starts: bytes that arrive before it is
// open are written first, in order, and count against MaxLogBytes.
func TestLogBytesBeforeOpen(t *testing.T) {
	old := MaxLogBytes
	MaxLogBytes = 10
	defer func() { MaxLogBytes = old }()
	tests := []struct {
		name          string
		before, after []string
		want          string
	}{
		{"all before", []string{"ab", "cd"}, nil, "abcd"},
		{"before and after", []string{"ab"}, []string{"cd", "ef"}, "abcdef"},
		{"after only", nil, []string{"abc"}, "abc"},
		{"cap reached while opening", []string{"0123456789xyz"}, []string{"more"}, "0123456789" + fmt.Sprintf(LogCapMarker, 10, 7)},
		{"nothing", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "logs", "call.log")
			c := newCapture(-1, path)
			for _, b := range tt.before {
				c.add(streamStdout, []byte(b))
			}
			c.startLog()
			c.waitLog()
			for _, b := range tt.after {
				c.add(streamStderr, []byte(b))
			}
			if err := c.detach(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("log %q, want %q", got, tt.want)
			}
		})
	}
}

// A log that cannot be created no longer stops the call from running: the
// output is complete and LogErr says why the log is missing.
func TestLogCannotBeCreated(t *testing.T) {
	r := newTestRunner(t, Options{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := r.Shell(context.Background(), ShellRequest{Command: "echo ran", Dir: t.TempDir(), LogPath: filepath.Join(file, "call.log")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.String() != "ran\n" || res.LogErr == nil || !strings.Contains(res.LogErr.Error(), "not a directory") {
		t.Errorf("stdout %q, LogErr %v; want the output and a log error", res.Stdout.String(), res.LogErr)
	}
}
