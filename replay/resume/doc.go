// Package resume is `pvisor resume` and `pvisor fork`, and capture by
// export: a captured session (a bundle, or found by id in a home) is
// restored, continued with its agent CLI's native flags through the bridge
// (the agent's launch.Resume), and captured again; a fork from the middle
// of a session replays its prefix with the engine first. It uses the
// engine's public parts (replay.Run, BuildPlan, the upstreams) and names
// no agent.
package resume
