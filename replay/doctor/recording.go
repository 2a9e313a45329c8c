package doctor

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/replay/workspace"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// recordingFor is the bundled recording the doctor continues with the CLI
// at entry, as a directory of the agent's recording: "." itself, or, for an
// agent whose releases cannot continue each other's format (mini-swe-agent
// 1.x and 2.x), the <version> directory of the installed release's major
// version (the newest when none has it). The installed release is asked, in a network
// namespace of its own where this process may make one.
func recordingFor(ctx context.Context, agent, entry, dir string) (string, error) {
	rec, err := recording(agent)
	if err != nil {
		return "", err
	}
	base := "."
	if _, err := fs.Stat(rec, "manifest.json"); err == nil {
		return base, nil
	}
	entries, err := fs.ReadDir(rec, base)
	if err != nil {
		return "", err
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) == 0 {
		return "", fmt.Errorf("no bundled %s recording", agent)
	}
	for _, v := range versions {
		if _, err := tested.ParseSemver(v); err != nil {
			return "", fmt.Errorf("bundled %s recording %q: %w", agent, v, err)
		}
	}
	slices.SortFunc(versions, func(a, b string) int { return tested.MustSemver(a).Compare(tested.MustSemver(b)) })
	version, err := replay.ProbeAgentVersion(ctx, agent, entry, filepath.Join(dir, "version-probe"), os.Geteuid() == 0)
	if err != nil {
		return "", fmt.Errorf("which %s generation is installed: %w", agent, err)
	}
	major := func(v string) string { return strings.SplitN(v, ".", 2)[0] }
	pick := versions[len(versions)-1]
	for _, v := range versions {
		if major(v) == major(version) {
			pick = v
		}
	}
	return path.Join(base, pick), nil
}

// layOut writes the bundled session in base and its initial repo under dir
// and returns the session's path and its number of steps.
func layOut(agent, base, dir string, row *Row) (string, int, error) {
	var m struct {
		Files      map[string]string `json:"files"`
		CLIVersion string            `json:"cli_version"`
	}
	rec, err := recording(agent)
	if err != nil {
		return "", 0, err
	}
	raw, err := fs.ReadFile(rec, path.Join(base, "manifest.json"))
	if err != nil {
		return "", 0, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", 0, fmt.Errorf("bundled %s manifest: %w", agent, err)
	}
	row.Recording = agent + " " + m.CLIVersion
	data, err := fs.ReadFile(rec, path.Join(base, m.Files["session"]))
	if err != nil {
		return "", 0, err
	}
	traj := filepath.Join(dir, m.Files["session"])
	if err := os.WriteFile(traj, data, 0o600); err != nil {
		return "", 0, err
	}
	f, _ := agents.Lookup(agent)
	t, err := f.Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		return "", 0, fmt.Errorf("bundled %s session: %w", agent, err)
	}
	repo, err := fs.ReadFile(rec, path.Join(base, "repo.tar.gz"))
	if err != nil {
		return "", 0, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(repo))
	if err != nil {
		return "", 0, fmt.Errorf("bundled %s repo: %w", agent, err)
	}
	if err := workspace.Untar(zr, filepath.Join(dir, "ws")); err != nil {
		return "", 0, fmt.Errorf("bundled %s repo: %w", agent, err)
	}
	return traj, len(t.Steps()), nil
}
