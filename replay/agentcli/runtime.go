package agentcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// RuntimeManifestFile names the manifest of an agent runtime directory.
const RuntimeManifestFile = "sandbox-playback-agent.json"

// RuntimeSchema is its schema_version.
const RuntimeSchema = "sandbox-playback.agent-runtime/v1"

// runtimeManifest is sandbox-playback-agent.json: a packaged agent CLI, as
// pVisor's --agent-runtime reads it.
type runtimeManifest struct {
	SchemaVersion string          `json:"schema_version"`
	Agent         string          `json:"agent"`
	Version       string          `json:"version"`
	Entrypoint    string          `json:"entrypoint"`
	Paths         json.RawMessage `json:"paths,omitempty"`
}

// agentRuntime resolves --agent-runtime DIR to the entrypoint it names and
// the version it declares. The entrypoint is relative to DIR and may not
// leave it.
func Runtime(dir, agent string) (entry, version string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime %s: %v", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(abs, RuntimeManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime %s has no %s", abs, RuntimeManifestFile)
	}
	if err != nil {
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime %s: %v", abs, err)
	}
	var m runtimeManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime %s: %v", RuntimeManifestFile, err)
	}
	want, _ := agents.Lookup(agent)
	got, ok := agents.Lookup(m.Agent)
	switch {
	case m.SchemaVersion != RuntimeSchema:
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime: schema_version must be %q, got %q", RuntimeSchema, m.SchemaVersion)
	case !ok || want == nil || got.Agent() != want.Agent():
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime packages agent %q, the request is for %s", m.Agent, agent)
	case m.Version == "":
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime: %s has no version", RuntimeManifestFile)
	case m.Entrypoint == "" || filepath.IsAbs(m.Entrypoint) || hasDotDot(m.Entrypoint):
		return "", "", result.Fail(result.ConfigurationError, "--agent-runtime: entrypoint %q must be a relative path inside the runtime directory", m.Entrypoint)
	}
	return filepath.Join(abs, filepath.Clean(m.Entrypoint)), m.Version, nil
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
