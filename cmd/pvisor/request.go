package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// RequestSchema is the schema_version of a --request file.
const RequestSchema = "sandbox-playback.request/v1"

// maxRequestBytes bounds a --request file, as pVisor bounds its inputs.
const maxRequestBytes = 256 << 20

// requestFile is pVisor's JSON request (reference pvisor.md §5.2). Unknown
// fields are errors, as in the TOML form.
type requestFile struct {
	SchemaVersion          *string      `json:"schema_version"`
	Agent                  requestAgent `json:"agent"`
	Trajectory             string       `json:"trajectory"`
	TrajectoryAssets       *string      `json:"trajectory_assets"`
	AfterStep              int          `json:"after_step"`
	Workspace              *string      `json:"workspace"`
	StateDir               *string      `json:"state_dir"`
	OutputDir              *string      `json:"output_dir"`
	MaxSteps               *int         `json:"max_steps"`
	SessionID              *string      `json:"session_id"`
	ReplayOnly             bool         `json:"replay_only"`
	PrepareOnly            bool         `json:"prepare_only"`
	AllowStaleObservations bool         `json:"allow_stale_observations"`
	DisableThinking        bool         `json:"disable_thinking"`
	BoundaryUserPrompt     *string      `json:"boundary_user_prompt"`
	RunID                  *string      `json:"run_id"`
	// Ours, beside pVisor's: what the flags of the same names do.
	Instance string `json:"instance"`
	Upstream string `json:"upstream"`
}

type requestAgent struct {
	Type            string   `json:"type"`
	Entrypoint      *string  `json:"entrypoint"`
	Runtime         *string  `json:"runtime"`
	DisallowedTools []string `json:"disallowed_tools"`
}

// errUnsupportedAgent marks an unknown agent in a request file: pVisor
// reports it as unsupported_agent (exit 11), not as a flag error.
type errUnsupportedAgent struct{ msg string }

func (e *errUnsupportedAgent) Error() string { return e.msg }

// loadRequestFile reads a --request file into a request.
func loadRequestFile(path string) (*replay.Request, error) {
	req := &replay.Request{}
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		return req, fmt.Errorf("--request: %v", err)
	case !st.Mode().IsRegular():
		return req, fmt.Errorf("--request %s: input must be a regular file", path)
	case st.Size() > maxRequestBytes:
		return req, fmt.Errorf("--request %s: input exceeds %d bytes", path, maxRequestBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return req, fmt.Errorf("--request: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRequestBytes+1))
	if err != nil {
		return req, fmt.Errorf("--request: %v", err)
	}
	if int64(len(data)) != st.Size() {
		return req, fmt.Errorf("--request %s: input changed while being read", path)
	}
	var rf requestFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return req, fmt.Errorf("--request %s: %v", path, err)
	}
	if dec.More() {
		return req, fmt.Errorf("--request %s: more than one JSON value", path)
	}
	if rf.RunID != nil {
		req.RunID = *rf.RunID
	}
	switch {
	case rf.SchemaVersion == nil || *rf.SchemaVersion != RequestSchema:
		return req, fmt.Errorf("--request %s: request schema_version must be %q", path, RequestSchema)
	case rf.Workspace == nil || rf.StateDir == nil || rf.OutputDir == nil:
		return req, fmt.Errorf("--request %s: workspace, state_dir and output_dir are required", path)
	case rf.PrepareOnly && rf.ReplayOnly:
		return req, fmt.Errorf("--request %s: prepare_only and replay_only are mutually exclusive", path)
	case rf.SessionID != nil && *rf.SessionID == "":
		return req, fmt.Errorf("--request %s: session_id must be non-empty and contain no NUL, CR, or LF", path)
	}
	if _, ok := agents.Lookup(rf.Agent.Type); !ok {
		return req, &errUnsupportedAgent{fmt.Sprintf("--request %s: unsupported agent %q", path, rf.Agent.Type)}
	}
	*req = replay.Request{
		Agent: rf.Agent.Type, Trajectory: rf.Trajectory, AfterStep: rf.AfterStep, Workspace: *rf.Workspace,
		StateRoot: *rf.StateDir, OutputRoot: *rf.OutputDir, AllowStaleObservations: rf.AllowStaleObservations,
		DisableThinking: rf.DisableThinking, DisallowedTools: rf.Agent.DisallowedTools, RunID: req.RunID,
		Instance: rf.Instance, Upstream: rf.Upstream,
	}
	if rf.Agent.Entrypoint != nil {
		req.AgentEntrypoint = *rf.Agent.Entrypoint
	}
	if rf.Agent.Runtime != nil {
		req.AgentRuntime = *rf.Agent.Runtime
	}
	if rf.MaxSteps != nil {
		req.MaxSteps, req.MaxStepsSet = *rf.MaxSteps, true
	}
	if rf.SessionID != nil {
		req.SessionID = *rf.SessionID
	}
	if rf.TrajectoryAssets != nil {
		req.TrajectoryAssets = *rf.TrajectoryAssets
	}
	if rf.BoundaryUserPrompt != nil {
		req.BoundaryUserPrompt = *rf.BoundaryUserPrompt
	}
	switch {
	case rf.PrepareOnly:
		req.Mode = replay.PrepareOnly
	case rf.ReplayOnly:
		req.Mode = replay.ReplayOnly
	}
	return req, nil
}

// isUnsupportedAgent reports whether err is a request file's unknown agent.
func isUnsupportedAgent(err error) bool {
	var u *errUnsupportedAgent
	return errors.As(err, &u)
}
