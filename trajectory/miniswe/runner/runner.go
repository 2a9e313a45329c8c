// Package runner is the Python program pvisor continues mini-swe-agent
// with: it drives mini's own agent, model and environment classes, run
// with the python of the agent's venv.
package runner

import _ "embed"

// Script is runner.py.
//
//go:embed runner.py
var Script []byte

// ExitUnsupported is the runner's exit status when the installed mini
// cannot continue the trajectory's format.
const ExitUnsupported = 11
