package main

import (
	"fmt"
	"io"
	"net"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

const fakeModelUsage = `Usage: pvisor fake-model --script FILE [--addr 127.0.0.1:PORT] [--log FILE]

Serves a scripted model on loopback (Anthropic Messages, OpenAI Responses and
Chat Completions, streaming or not), for trying agents and pvisor without a
model service. The first request that offers tools fixes the base (the
assistant turns its conversation already holds, so a resumed session gets
the script from its start); reply i then answers a conversation of base+i
turns, so retries get the same reply. A request past the last reply gets
the script's "final" text, a warning on stderr and "script_exhausted" in
the log. Ids are this server's own (a random seed per start), never those
of an earlier server. Every request is appended to --log as JSON.

Example:
    $ pvisor fake-model --script bridge/fakemodel/testdata/example-script.json --addr 127.0.0.1:8765

Flags:
`

func cmdFakeModel(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("fake-model", pflag.ContinueOnError)
	script := fs.String("script", "", "reply script `file` (JSON)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback `address` to listen on")
	logPath := fs.String("log", "", "append every request to this `file`")
	if err := parseFlags(fs, fakeModelUsage, args, stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "pvisor fake-model: %v\n", err)
		return 2
	}
	if *script == "" {
		fmt.Fprintln(stderr, "pvisor fake-model: --script is required")
		return 2
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(stderr, "pvisor fake-model: --addr %s: must be a loopback IP and port, e.g. 127.0.0.1:8765\n", *addr)
		return 2
	}
	if err := fakemodel.ListenAndServe(*addr, *script, *logPath); err != nil {
		fmt.Fprintf(stderr, "pvisor fake-model: %v\n", err)
		return 1
	}
	return 0
}
