// Package toolenv is what replayed tools run in: their isolation (PID and
// mount namespaces, limits, the network as [overlaynet] asks, through
// pvisor's egress proxy), and their environment (credentials left out).
// The engine makes one Tools per run; what applied goes into the run's
// result metadata (tool_isolation, overlaynet).
package toolenv

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/egress"
)

// DefaultToolDataLimit bounds each replayed tool process's data segment
// (RLIMIT_DATA): a hostile `x=$(cat /dev/zero)` fails in the tool instead
// of taking the machine down. Address-space reservations (V8, JVM) do not
// count against it.
const DefaultToolDataLimit = 8 << 30

// NoIsolation turns isolation off, for a benchmark that measures the
// engine without it.
var NoIsolation bool

// Config is what of a run's request decides its tools' environment.
type Config struct {
	Overlaynet Overlaynet
	// InheritEnv passes this process's environment minus credentials
	// (--inherit-env); PassEnv names variables passed as they are.
	InheritEnv bool
	PassEnv    []string
	// Executor is [run] executor; Container its root when "container".
	Executor  string
	Container ContainerConfig
}

// Tools is one run's tool environment. meta is the run's result metadata;
// warn, when set, gets progress warnings.
type Tools struct {
	cfg   Config
	meta  map[string]any
	warn  func(string)
	proxy *egress.Proxy // under --overlaynet proxy/auto, made on first use
	done  bool          // the proxy's summary is on the result
	// croot is the run's container root (--executor container), cbase
	// the state dir's directory that holds it and any unpacked image.
	croot *toolrun.ContainerRoot
	cbase string
}

// New is the tool environment of a run with cfg.
func New(cfg Config, meta map[string]any, warn func(string)) *Tools {
	return &Tools{cfg: cfg, meta: meta, warn: warn}
}

// Isolation is how replayed tools are kept from pvisor, also recorded on
// the result. It needs root (namespaces, mounting /proc) and a system that
// allows namespaces; without them tools run as before and the result says
// so, unless [overlaynet] mode = "deny" asked for what cannot be given.
func (t *Tools) Isolation() (toolrun.Isolation, error) {
	netMode, netPolicy := t.cfg.Overlaynet.Effective()
	iso := toolrun.Isolation{Enabled: os.Geteuid() == 0 && !NoIsolation, DataLimit: DefaultToolDataLimit, NoNetwork: netMode == NetDeny}
	missing := "pvisor does not run as root: tools share pvisor's PID namespace and /proc (run as root for isolation)"
	if iso.Enabled {
		if err := iso.Probe(); err != nil {
			iso.Enabled, missing = false, fmt.Sprintf("%v: tools share pvisor's PID namespace and /proc", err)
		}
	}
	meta := map[string]any{"data_limit_bytes": iso.DataLimit, "network": "host"}
	if iso.NoNetwork {
		meta["network"] = "loopback-only"
	}
	t.meta["tool_isolation"] = meta
	if !iso.Enabled {
		if iso.NoNetwork {
			return iso, configErr("[overlaynet] mode = \"deny\" cannot be honoured: %s", missing)
		}
		switch {
		case netMode == NetProxy:
			return iso, configErr("--overlaynet proxy cannot be honoured: %s (run where namespaces are allowed, or use --overlaynet off)", missing)
		case netMode == NetAuto && netPolicy != "public":
			return iso, configErr("--overlaynet auto with --overlaynet-policy %s cannot be enforced: %s (run where namespaces are allowed)", netPolicy, missing)
		}
		// auto with policy public: nothing to enforce but the recording,
		// which needs the namespace; the result says it did not apply.
		if netMode == NetAuto {
			t.overlaynetMeta(NetOff, "auto: "+missing)
		} else {
			t.overlaynetMeta(NetOff, "")
		}
		meta["mechanisms"] = []string{}
		if _, view, why := overlay.ToolView(); view {
			missing += "; in the overlay of the whole tree they keep pvisor's binds of its state and output dirs, so writes there are real"
		} else if why != "" {
			missing += "; " + why + ": writes outside the workspace reach the host"
		}
		meta["missing"] = missing
		meta["data_limit_bytes"] = 0 // applied by the isolated init only
		meta["network"] = "host"
		return toolrun.Isolation{}, nil
	}
	if netMode == NetProxy || netMode == NetAuto {
		p, err := t.egressProxy(netPolicy)
		if err != nil {
			return iso, err
		}
		probe := iso
		probe.Egress = p
		if err := probe.Probe(); err != nil {
			// Root, yet the relay cannot listen in a fresh namespace: never
			// fall back to the host network when a proxy was asked for.
			return iso, fail(result.ExecutorError, "--overlaynet %s: the egress relay could not start: %v", netMode, err)
		}
		iso.Egress = p
		meta["network"] = "egress-proxy"
		t.overlaynetMeta(NetProxy, "")
	} else if netMode == NetDeny {
		t.overlaynetMeta(NetDeny, "")
	} else {
		t.overlaynetMeta(NetOff, "")
	}
	memory := t.memoryLimit(&iso, meta)
	mechs := []string{"pid-namespace", "fresh-proc", "mount-namespace", "no-new-privs", "capabilities-dropped", memory, "group-killed-with-init"}
	// In an overlay run, writes outside the workspace land in an overlay of
	// the whole tree, when the kernel let init build one.
	if _, view, why := overlay.ToolView(); view {
		mechs = append(mechs, "root-overlay")
	} else if why != "" {
		meta["missing"] = why + ": writes outside the workspace reach the host"
	}
	meta["mechanisms"] = mechs
	return iso, nil
}

// MemoryLimit caps the memory of all of a run's tools together when a
// memory cgroup is available (DefaultToolDataLimit per process otherwise).
// A variable so that tests can make a tool exceed it.
var MemoryLimit uint64 = 8 << 30

// memoryLimit gives iso a per-run memory cgroup (v2, else v1) in place of
// RLIMIT_DATA when this system has one that works, records which limit
// applies, and returns its mechanism name. The cgroup is removed by
// closeMemory at the end of the run.
func (t *Tools) memoryLimit(iso *toolrun.Isolation, meta map[string]any) string {
	limit := map[string]any{"mechanism": "rlimit-data", "bytes": iso.DataLimit, "scope": "each tool process"}
	meta["memory_limit"] = limit
	cg, err := toolrun.NewMemoryCgroup(MemoryLimit)
	if err == nil {
		probe := *iso
		probe.Memory = cg
		if err = probe.Probe(); err != nil {
			cg.Close()
		}
	}
	if err != nil {
		limit["cgroup_missing"] = err.Error()
		return "rlimit-data"
	}
	iso.Memory, iso.DataLimit = cg, 0
	meta["data_limit_bytes"] = 0
	limit["mechanism"], limit["bytes"], limit["scope"] = cg.Mechanism(), cg.Limit, "all of the run's tools together"
	return cg.Mechanism()
}

// secretMarkers are substrings of variable names never handed to tools
// unless the user passes them by name; secretWords are whole
// '_'-separated parts of a name (GITHUB_PAT, OPENROUTER_KEY).
var (
	secretMarkers = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "AUTHORIZATION", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY"}
	secretWords   = map[string]bool{"KEY": true, "KEYS": true, "PAT": true, "PASS": true, "AUTH": true, "COOKIE": true}
	// secretPrefixes are how common credentials start, whatever the name.
	secretPrefixes = []string{"sk-", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "AKIA", "AIza"}
)

// Vars is the environment re-run tools see: with --inherit-env this
// process's environment minus credentials, otherwise a small fixed base;
// --pass-env names are added from this process either way, credentials or
// not.
func (t *Tools) Vars() []string {
	var env []string
	if t.cfg.InheritEnv {
		for _, kv := range os.Environ() {
			name, value, _ := strings.Cut(kv, "=")
			if !IsSecretName(name) && !IsSecretValue(value) {
				env = append(env, kv)
			}
		}
	} else {
		for _, name := range []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL"} {
			if v, ok := os.LookupEnv(name); ok && !IsSecretValue(v) {
				env = append(env, name+"="+v)
			}
		}
	}
	for _, name := range t.cfg.PassEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, fmt.Sprintf("%s=%s", name, v))
		}
	}
	return env
}

// IsSecretName: a variable name that holds a credential.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, m := range secretMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	for _, w := range strings.Split(up, "_") {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// IsSecretValue: a URL with a password (DATABASE_URL=postgres://u:p@h/db)
// or a value shaped like a well-known credential.
func IsSecretValue(v string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(v, p) && len(v) >= len(p)+16 {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(v, func(c rune) bool { return c == ' ' || c == ',' || c == ';' }) {
		if !strings.Contains(part, "://") || !strings.Contains(part, "@") {
			continue
		}
		if u, err := url.Parse(part); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				return true
			}
		}
	}
	return false
}

func configErr(format string, args ...any) *result.Failure {
	return result.Fail(result.ConfigurationError, format, args...)
}

func fail(category, format string, args ...any) *result.Failure {
	return result.Fail(category, format, args...)
}
