// Package runner is the Python program pvisor continues OpenHands V1
// conversations with: it drives openhands-sdk's own Agent, LLM, tools and
// LocalConversation, run with the python of the SDK's venv.
package runner

import _ "embed"

// Script is runner.py.
//
//go:embed runner.py
var Script []byte

// ExitUnsupported is the runner's exit status when the installed SDK
// cannot rebuild the conversation's agent (a tool it does not know).
const ExitUnsupported = 11

// ToolKinds are the tools (the `kind` of a SystemPromptEvent's tool) the
// runner can give the agent; finish and think come with every agent.
var ToolKinds = map[string]bool{
	"TerminalTool": true, "FileEditorTool": true, "TaskTrackerTool": true,
	"FinishTool": true, "ThinkTool": true,
}
