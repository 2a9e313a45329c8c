package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersion: every spelling (-V as pVisor's) prints the version stamped at build time
// (make build: -X main.version=…), and nothing on stderr.
func TestVersion(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = "1.2.3+g0123456789ab"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-V"}, {"replay", "-V"}, {"replay", "--version"}} {
		arg := strings.Join(args, " ")
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d", arg, code)
		}
		if got, want := out.String(), "pvisor 1.2.3+g0123456789ab\n"; got != want || errb.Len() != 0 {
			t.Errorf("%s: stdout %q (want %q), stderr %q", arg, got, want, errb.String())
		}
	}
}
