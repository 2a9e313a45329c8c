package agentcli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The version a CLI printed is reused while the file run is the same, and
// probed again once it is replaced; failures are never reused.
func TestVersionCache(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "runs")
	cli := filepath.Join(dir, "cli")
	write := func(script string) {
		t.Helper()
		// A new file (new inode), as an upgrade installs one.
		tmp := cli + ".new"
		if err := os.WriteFile(tmp, []byte("#!/bin/sh\necho x >> "+counter+"\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cli); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(cli, link); err != nil {
		t.Fatal(err)
	}
	probes := func() int {
		data, _ := os.ReadFile(counter)
		return strings.Count(string(data), "x")
	}
	steps := []struct {
		name, script, entry string
		wantVersion         string
		wantCached          bool
		wantErr             bool
		wantProbes          int
	}{
		{"first run probes", "echo 1.2.3", cli, "1.2.3", false, false, 1},
		{"second run reuses", "", cli, "1.2.3", true, false, 1},
		{"a link to it reuses", "", link, "1.2.3", true, false, 1},
		{"an upgrade probes again", "echo 1.2.40", cli, "1.2.40", false, false, 2},
		{"and is reused", "", cli, "1.2.40", true, false, 2},
		{"a failing CLI is probed", "exit 3", cli, "", false, true, 3},
		{"every time", "", cli, "", false, true, 4},
	}
	for _, s := range steps {
		if s.script != "" {
			write(s.script)
		}
		v, _, cached, err := CachedVersion(context.Background(), root, s.entry, os.Environ())
		if v != s.wantVersion || cached != s.wantCached || (err != nil) != s.wantErr || probes() != s.wantProbes {
			t.Errorf("%s: version %q cached %v err %v probes %d; want %q %v err=%v %d",
				s.name, v, cached, err, probes(), s.wantVersion, s.wantCached, s.wantErr, s.wantProbes)
		}
	}
	// A damaged cache file only costs a probe.
	if err := os.WriteFile(filepath.Join(root, versionCacheName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("echo 2.0.0")
	if v, _, cached, err := CachedVersion(context.Background(), root, cli, os.Environ()); v != "2.0.0" || cached || err != nil {
		t.Errorf("after a damaged cache: %q %v %v", v, cached, err)
	}
	if v, _, cached, _ := CachedVersion(context.Background(), root, cli, os.Environ()); v != "2.0.0" || !cached {
		t.Errorf("the cache was not rewritten: %q %v", v, cached)
	}
}

// BenchmarkVersionProbe times the real CLIs' --version (PVISOR_E2E_DIR/bin)
// against a cache hit for the same binary, interleaved: what a continuation
// run saves once the state root has seen the CLI.
func BenchmarkVersionProbe(b *testing.B) {
	e2e := os.Getenv("PVISOR_E2E_DIR")
	if e2e == "" {
		b.Skip("PVISOR_E2E_DIR is not set (the installed agent CLIs)")
	}
	for _, cli := range []string{"claude", "codex", "opencode", "pi"} {
		b.Run(cli, func(b *testing.B) {
			entry := filepath.Join(e2e, "bin", cli)
			if _, err := os.Stat(entry); err != nil {
				b.Skip(err)
			}
			root := b.TempDir()
			env, err := IsolatedHome([]string{"PATH=" + filepath.Join(e2e, "bin") + ":/usr/bin:/bin"}, filepath.Join(root, "home"))
			if err != nil {
				b.Fatal(err)
			}
			var probe, hit []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, _, err := ProbeVersion(context.Background(), entry, env); err != nil {
					b.Fatal(err)
				}
				probe = append(probe, time.Since(start))
				start = time.Now()
				if _, _, _, err := CachedVersion(context.Background(), root, entry, env); err != nil {
					b.Fatal(err)
				}
				hit = append(hit, time.Since(start))
			}
			median := func(ds []time.Duration) time.Duration {
				ds = slices.Clone(ds)
				slices.Sort(ds)
				return ds[len(ds)/2]
			}
			b.ReportMetric(float64(median(probe).Microseconds())/1e3, "probe-p50-ms")
			b.ReportMetric(float64(median(hit).Microseconds())/1e3, "cached-p50-ms")
			b.ReportMetric(float64(median(hit))/float64(median(probe)), "cached/probe")
		})
	}
}
