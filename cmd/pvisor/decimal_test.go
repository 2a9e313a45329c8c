package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Integer flags take decimal digits only; leading zeros are decimal.
func TestDecimalFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"8", 8, true}, {"010", 10, true}, {"0", 0, true}, {"-1", -1, true},
		{"0x3", 0, false}, {"1_0", 0, false}, {"0o7", 0, false}, {"+3", 0, false}, {"3.0", 0, false},
		{"", 0, false}, {"-", 0, false}, {" 3", 0, false}, {"99999999999999999999", 0, false},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(&bytes.Buffer{})
		var n int
		decimalVar(fs, &n, "n", 0, "")
		err := fs.Parse([]string{"--n", tc.in})
		if (err == nil) != tc.ok || tc.ok && n != tc.want {
			t.Errorf("--n %q: got %d, %v; want %d ok=%v", tc.in, n, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), `"`+tc.in+`"`) {
			t.Errorf("--n %q: error %q does not name the value", tc.in, err)
		}
	}
}

// Every integer flag of every subcommand is decimal.
func TestDecimalFlagsEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--after-step", "0x1"},
		{"replay", "--max-steps", "0x1"},
		{"replay", "--timeout-ms", "1_000"},
		{"batch", "run", "x.toml", "--jobs", "0x2"},
		{"batch", "run", "x.toml", "--shards", "0x2"},
		{"batch", "emit", "x.toml", "--shards", "0x2"},
		{"batch", "emit", "x.toml", "--jobs", "0x2"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stdout.String()+stderr.String(), `"`+args[len(args)-1]+`" is not a decimal integer`) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, stdout.String(), stderr.String())
		}
	}
}
