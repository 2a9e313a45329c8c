package main

import (
	"bytes"
	"testing"
)

// TestVersion: both spellings print the version stamped at build time
// (make build: -X main.version=…), and nothing on stderr.
func TestVersion(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = "1.2.3+g0123456789ab"
	for _, arg := range []string{"version", "--version"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d", arg, code)
		}
		if got, want := out.String(), "pvisor 1.2.3+g0123456789ab\n"; got != want || errb.Len() != 0 {
			t.Errorf("%s: stdout %q (want %q), stderr %q", arg, got, want, errb.String())
		}
	}
}
