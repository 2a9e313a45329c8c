package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDoctorReleasesFlags: the release watch checks every tested package,
// so flags that pick CLIs here are refused rather than ignored.
func TestDoctorReleasesFlags(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "--releases", "--agent", "pi"},
		{"doctor", "--releases", "--agent-entrypoint", "/bin/true"},
		{"doctor", "--releases", "--keep"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--releases checks every tested package") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
