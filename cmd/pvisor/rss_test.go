package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// rssMain is the scripts' `rss` program: `exec rss pvisor ARGS…` runs the
// command with the script's stdio, then appends its peak resident set (the
// kernel's ru_maxrss from wait4, which covers the reaped descendants too)
// to stderr, and exits as the command did. `peakrss MB` then checks it.
func rssMain() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rss COMMAND [ARG…]")
		return 2
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "rss:", err)
		return 2
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "rss: no rusage on this system")
		return 2
	}
	fmt.Fprintf(os.Stderr, "\nrss: peak %d KiB\n", ru.Maxrss) // Linux counts ru_maxrss in KiB
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

var peakLine = regexp.MustCompile(`(?m)^rss: peak (\d+) KiB$`)

// cmdPeakRSS is `peakrss MB`: the last `exec rss …` command's peak resident
// set was at most MB MiB.
func cmdPeakRSS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: peakrss MB")
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil || limit <= 0 {
		ts.Fatalf("peakrss %q: a positive number of MiB", args[0])
	}
	m := peakLine.FindAllStringSubmatch(ts.ReadFile("stderr"), -1)
	if m == nil {
		ts.Fatalf("peakrss: no 'rss: peak' line in stderr (run the command as 'exec rss pvisor …')")
	}
	kib, _ := strconv.Atoi(m[len(m)-1][1])
	ts.Logf("peak RSS %d MiB (limit %d MiB)", kib>>10, limit)
	if kib > limit<<10 {
		ts.Fatalf("peak RSS %d MiB is over %d MiB", kib>>10, limit)
	}
}
