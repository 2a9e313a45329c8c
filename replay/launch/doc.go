// Package launch is the contract between the engine and an agent's native
// CLI, in the shape of database/sql/driver: the engine (package replay)
// names no agent, and each agent's folder (trajectory/<agent>/) implements
// what is here — how its CLI is found and its version read, how a rebuilt
// session is staged in an isolated home and the CLI launched against the
// bridge, how the session the CLI wrote is cleaned of the resume envelope,
// and how a captured session is resumed or forked. trajectory/agents lists
// the agents; nothing else does.
//
// Everything an implementation needs from the engine arrives in a
// Continuation or a ResumeCall; everything the engine needs back is a
// Staged, a Command or a Collected. An implementation never starts the CLI
// itself for the run (the engine supervises it), but may run it for staging
// or collecting (OpenCode's import and export).
package launch
