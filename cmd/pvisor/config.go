package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
	toolrun "github.com/pvisor/pvisor/run"
)

// replayFile is the TOML form of a replay request. Every table rejects
// unknown keys, so a typo never silently becomes a default.
type replayFile struct {
	Replay     *replayTable     `toml:"replay"`
	Run        *runTable        `toml:"run"`
	Overlayfs  *overlayfsTable  `toml:"overlayfs"`
	Overlaynet *overlaynetTable `toml:"overlaynet"`
}

type replayTable struct {
	Agent                  string `toml:"agent"`
	Trajectory             string `toml:"trajectory"`
	Instance               string `toml:"instance"`
	AfterStep              int    `toml:"after_step"`
	MaxSteps               *int   `toml:"max_steps"`
	PrepareOnly            bool   `toml:"prepare_only"`
	ReplayOnly             bool   `toml:"replay_only"`
	AllowStaleObservations bool   `toml:"allow_stale_observations"`
	BoundaryUserPrompt     string `toml:"boundary_user_prompt"`
	// BoundaryUserPromptFile and PromptArgs are --boundary-user-prompt-file
	// and its --prompt-arg values (a table: prompt_args = { ISSUE = "42" }).
	BoundaryUserPromptFile string            `toml:"boundary_user_prompt_file"`
	PromptArgs             map[string]string `toml:"prompt_args"`
	RunID                  string            `toml:"run_id"`
	SessionID              string            `toml:"session_id"`
	Workspace              string            `toml:"workspace"`
	StateDir               string            `toml:"state_dir"`
	OutputDir              string            `toml:"output_dir"`
	AgentEntrypoint        string            `toml:"agent_entrypoint"`
	AgentRuntime           string            `toml:"agent_runtime"`
	AgentArgs              []string          `toml:"agent_args"`
	DisallowedTools        []string          `toml:"disallowed_tools"`
	AllowUntestedVersion   bool              `toml:"allow_untested_version"`
	DisableThinking        bool              `toml:"disable_thinking"`
	Upstream               string            `toml:"upstream"`
	UpstreamModel          string            `toml:"upstream_model"`
	// --upstream-first-byte-timeout and --upstream-idle-timeout, in ms as
	// the other durations of a config (0 or unset: the defaults).
	UpstreamFirstByteTimeoutMS int    `toml:"upstream_first_byte_timeout_ms"`
	UpstreamIdleTimeoutMS      int    `toml:"upstream_idle_timeout_ms"`
	TrajectoryAssets           string `toml:"trajectory_assets"`
}

type runTable struct {
	TimeoutMS  int      `toml:"timeout_ms"`
	InheritEnv bool     `toml:"inherit_env"`
	PassEnv    []string `toml:"pass_env"`
	Safe       bool     `toml:"safe"`
	Executor   string   `toml:"executor"`
	Policy     string   `toml:"policy"`
	Rootfs     string   `toml:"rootfs"`
	Image      string   `toml:"image"`
}

type overlayfsTable struct {
	Path    string   `toml:"path"`
	Compose []string `toml:"compose"`
	Commit  string   `toml:"commit"`
}

type overlaynetTable struct {
	Mode   string   `toml:"mode"`
	Policy string   `toml:"policy"`
	Allow  []string `toml:"allow"`
	Agent  bool     `toml:"agent"`
}

// loadReplayConfig reads a TOML request. Relative paths in it are relative
// to the file, so a config works from any directory.
func loadReplayConfig(path string) (*replay.Request, error) {
	req := &replay.Request{}
	data, err := readConfigFile(path)
	if err != nil {
		return req, err
	}
	var cfg replayFile
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return req, tomlError(path, err, replayTables)
	}
	if cfg.Replay == nil {
		return req, fmt.Errorf("%s: missing [replay] table (it needs agent, trajectory and after_step)", path)
	}
	if cfg.Replay.AfterStep == 0 {
		return req, fmt.Errorf("%s: [replay] after_step is required: the replay re-runs steps 1..after_step, numbered from 1 ('pvisor inspect' lists them)", path)
	}
	return cfg.request(path)
}

// request turns the tables into a request; relative paths are resolved
// against the directory of path, the file they were read from.
func (cfg *replayFile) request(path string) (*replay.Request, error) {
	req := &replay.Request{}
	r := cfg.Replay
	if r.PrepareOnly && r.ReplayOnly {
		return req, fmt.Errorf("%s: prepare_only and replay_only are mutually exclusive", path)
	}
	rel := relativeTo(filepath.Dir(path))
	*req = replay.Request{
		Agent: r.Agent, Trajectory: rel(r.Trajectory), Instance: r.Instance, AfterStep: r.AfterStep,
		AllowStaleObservations: r.AllowStaleObservations, BoundaryUserPrompt: r.BoundaryUserPrompt,
		RunID: r.RunID, SessionID: r.SessionID, Workspace: rel(r.Workspace), StateRoot: rel(r.StateDir),
		OutputRoot: rel(r.OutputDir), AgentEntrypoint: rel(r.AgentEntrypoint), AgentRuntime: rel(r.AgentRuntime), AgentArgs: r.AgentArgs, DisallowedTools: r.DisallowedTools,
		AllowUntestedVersion: r.AllowUntestedVersion, DisableThinking: r.DisableThinking, Upstream: r.Upstream, UpstreamModel: r.UpstreamModel,
		TrajectoryAssets: rel(r.TrajectoryAssets),
	}
	if r.MaxSteps != nil {
		req.MaxSteps, req.MaxStepsSet = *r.MaxSteps, true
	}
	if r.UpstreamFirstByteTimeoutMS < 0 || r.UpstreamIdleTimeoutMS < 0 {
		return req, fmt.Errorf("%s: upstream_first_byte_timeout_ms and upstream_idle_timeout_ms must be positive (or unset for %s and %s)",
			path, bridge.DefaultFirstByteTimeout, bridge.DefaultIdleTimeout)
	}
	req.UpstreamFirstByteTimeout = time.Duration(r.UpstreamFirstByteTimeoutMS) * time.Millisecond
	req.UpstreamIdleTimeout = time.Duration(r.UpstreamIdleTimeoutMS) * time.Millisecond
	req.BoundaryUserPromptFile = rel(r.BoundaryUserPromptFile)
	for _, k := range slices.Sorted(maps.Keys(r.PromptArgs)) {
		req.PromptArgs = append(req.PromptArgs, prompt.Arg{Key: k, Value: r.PromptArgs[k]})
	}
	switch {
	case r.PrepareOnly:
		req.Mode = replay.PrepareOnly
	case r.ReplayOnly:
		req.Mode = replay.ReplayOnly
	}
	if c := cfg.Run; c != nil {
		req.Run = replay.RunConfig{TimeoutMS: c.TimeoutMS, InheritEnv: c.InheritEnv, PassEnv: c.PassEnv, Safe: c.Safe, Executor: c.Executor, Policy: c.Policy,
			Rootfs: rel(c.Rootfs), Image: rel(c.Image)}
	}
	if c := cfg.Overlayfs; c != nil {
		req.Overlay = replay.OverlayConfig{Path: rel(c.Path), Commit: c.Commit}
		for _, d := range c.Compose {
			req.Overlay.Compose = append(req.Overlay.Compose, rel(d))
		}
	}
	if c := cfg.Overlaynet; c != nil {
		req.Overlaynet = replay.OverlaynetConfig{Mode: c.Mode, Policy: c.Policy, Allow: c.Allow, Agent: c.Agent}
	}
	return req, nil
}

// relativeTo resolves relative paths of a config against its directory, so
// a config works from any directory.
func relativeTo(base string) func(string) string {
	return func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
}

const replayTables = "[replay], [run], [overlayfs], [overlaynet]; see 'pvisor replay --help'"

// maxConfigBytes bounds a --config file; real ones are a few hundred bytes.
const maxConfigBytes = 1 << 20

// readConfigFile reads a regular file of at most maxConfigBytes: a FIFO
// would hang the read and /dev/zero would never end.
func readConfigFile(path string) ([]byte, error) {
	return toolrun.ReadUserFile("--config", path, maxConfigBytes, "a request file", "pass a TOML file")
}

// tomlError names the file, line and key of a TOML problem.
// allowed names the tables the file may hold, for the message.
func tomlError(path string, err error, allowed string) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var msgs []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d: unknown key %q", path, row, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%s (allowed tables: %s)", strings.Join(msgs, "; "), allowed)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return fmt.Errorf("%s:%d: %s", path, row, de.Error())
	}
	return fmt.Errorf("%s: %v", path, err)
}
