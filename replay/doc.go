// Package replay is the engine behind `pvisor replay`: it validates a
// request, plans the boundary, runs the prefix, rebuilds the native session
// and continues the agent, reporting everything as a result/v3. It names no
// agent: each agent's folder (trajectory/<agent>) implements the contract
// of replay/launch and trajectory/agents lists them, as database/sql's
// drivers register. Its parts are packages of their own: the CLI and its
// release (agentcli), running the CLI (agentproc), the tools' environment
// and isolation (toolenv), progress lines (progress), what a continuation
// did (outcome), resume and fork (resume).
//
// # Library use
//
// The command line is a thin layer over this package; a Go program replays a
// session the same way without running the binary. The surface is:
//
//   - [Run] takes a [*Request] (the flags of `pvisor replay`, field by field:
//     --agent is Agent, --after-step AfterStep, --prepare-only and
//     --replay-only are Mode, [RunConfig] is [run], [OverlayConfig]
//     [overlayfs]) and returns the [*result.Result] the command prints:
//     Phase, Quality, AgentStatus, the Artifacts by role, and Failure with a
//     category when the run failed. [result.ExitCode] maps that failure to
//     the command's exit code. Run never returns nil: a request that does
//     not validate is a configuration_error result, just as a bad flag is.
//   - resume.RunSession and resume.SessionRequest (package replay/resume)
//     are `pvisor resume` and `pvisor fork`.
//   - [OpenTrajectory] opens a session file for the decoders in
//     trajectory/agents, as `pvisor inspect` does.
//
// Run writes into StateRoot/RunID and OutputRoot/RunID (both default to
// [DefaultStateRoot] and [DefaultOutputRoot]); the result's artifact paths
// point there. A Continue run starts the agent CLI (Request.AgentEntrypoint,
// else the one on PATH) and the loopback bridge; PrepareOnly runs nothing
// and ReplayOnly only the prefix's tool calls, in Request.Workspace. Cancel
// ctx to stop a run: it still returns its result, with no process or mount
// left behind.
//
// Replayed tools run isolated in any program: their init is the calling
// binary re-executed, which an init function of package run recognises. A run with
// Request.Overlay set re-executes the calling binary as its overlay worker,
// so that program's main must begin as the pvisor command's does
// (overlay.IsChild and overlay.ChildMain, then [ChildCommand] handled with
// [ChildRequest] and Run); without it, leave Overlay empty or run the pvisor
// binary.
package replay
