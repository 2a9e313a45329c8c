// Package toolinit is the init of one isolated tool call: this binary
// re-executed (argv[0] Arg0) as PID 1 of the call's new PID, mount and
// network namespaces. It sets the call up (mounts, container root,
// memory cgroup, loopback, egress relay, no_new_privs, capabilities,
// Landlock, data limit), starts the tool, reports its exit to the Runner
// (package run) and reaps what the call leaves behind.
//
// Every isolated call pays for the start of this binary, so the package
// imports nothing but syscall and strconv: its package init then runs
// right after the runtime's own and before the rest of the program's (Go
// initializes a package as soon as its imports are, lexically first among
// the ready ones), and the init exits there, never touching the code and
// data of the program's other packages: 1.7 ms of CPU per call where
// running it from package run, after os, fmt, encoding/json and some 80
// other packages, cost 2.5 ms (a Go hello world: 1.5 ms).
package toolinit
