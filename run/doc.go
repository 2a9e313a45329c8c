// Package run executes one agent-neutral tool operation in the sandbox and
// returns raw, structured results. It knows no agent: the trajectory/<agent>
// packages map native calls onto these operations and format the results
// into each agent's native text, so everything a formatter could need is
// kept (separate and interleaved output with exact totals, exit codes and
// signals, durations, line lists with numbers, match lists, mtimes).
//
// # Shell
//
// A Runner owns every process it starts. Each process runs in its own
// process group; timeouts, cancellation, KillSession and Close kill the
// whole group, grandchildren included. Stdin is /dev/null unless an exec
// session asks for a pipe or a terminal. The environment is exactly the one
// given (Options.Env or ShellRequest.Env): nothing of pvisor's leaks in.
//
//	r, err := run.NewRunner(run.Options{Env: run.SanitizeEnv(os.Environ())})
//	defer r.Close() // kills background servers and exec sessions
//
// Three carry-over policies match what agents do between calls:
//
//   - Runner.Shell: stateless, explicit Dir (Codex shell / exec_command with
//     workdir). Nothing carries over.
//   - Session.Shell (Runner.NewSession): a fresh shell per call whose final
//     working directory becomes the next call's (Claude Code's Bash). The
//     directory is captured by an EXIT trap writing to a side file, never
//     to the command's output; for bash the trap comes from BASH_ENV so the
//     script and its error messages are untouched.
//   - Runner.Exec / WriteStdin / KillSession: long-running exec sessions
//     addressed by a numeric id (Codex exec_command with yield_time_ms and
//     write_stdin; Claude Code's background Bash). A call returns after its
//     yield or at exit; the process keeps running until it exits, is
//     killed, or the Runner closes. Sessions may use a pipe or a
//     pseudo-terminal for stdin. The caller may choose the id so recorded
//     write_stdin calls address the replayed session unchanged.
//
// Processes left running by a call (`server &`) survive the call, as they
// did for the agent, unless ShellRequest.KillBackground; WaitForEOF
// reproduces tools that wait for the output pipes to close (Python's
// subprocess.run). Output is capped per stream (head and tail kept, middle
// counted in Output.Omitted) and the full combined output can be written
// to ShellRequest.LogPath.
//
// # Files
//
// All file operations take absolute paths and report failures as *Error
// values whose Kind (NotFound, IsDir, NotUnique, NoMatch, …) a formatter
// turns into the agent's own error text:
//
//   - ReadFile, ReadLines, SplitLines, Window: whole files and 1-based line
//     windows, numbered the way Claude Code and OpenCode number them.
//   - WriteFile: creates parents, reports Created and the old content.
//   - Edit, MultiEdit: exact replacement, unique unless ReplaceAll;
//     MultiEdit is sequential and all-or-nothing.
//   - Glob, Grep, List: ripgrep semantics (hidden files skipped, .gitignore
//     inside git repositories, .ignore/.rgignore, --glob overrides, --type
//     filters, binary files skipped), Go regexp syntax, results in walk
//     order with mtimes so formatters sort as their agent does.
//
// The Codex apply_patch format lives in the sub-package run/patch.
package run
