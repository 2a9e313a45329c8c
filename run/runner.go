package run

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"
)

// Options configure a Runner. The zero value is usable.
type Options struct {
	// Env is the environment of every process unless a request gives its own.
	// It is used exactly as given: nil means an empty environment, never
	// pvisor's own (which may hold API keys). See SanitizeEnv.
	Env []string
	// Shell is the argv prefix a Command is appended to; default
	// {"/bin/bash", "-c"}. Codex uses {"bash", "-lc"}.
	Shell []string
	// MaxOutput caps the bytes kept per stream (head and tail halves);
	// default 1 MiB, negative means unlimited.
	MaxOutput int
	// DrainGrace is how long output is still read after the shell exited
	// while background processes keep the pipes open; default 20ms.
	DrainGrace time.Duration
	// KillGrace, when positive, sends SIGTERM to a group before SIGKILL on
	// timeout, cancellation and Close. Default 0: SIGKILL at once.
	KillGrace time.Duration
	// TempDir holds the runner's side files (final-cwd files); default
	// os.TempDir(). A private sub-directory is created and removed by Close.
	TempDir string
	// Isolation keeps every process away from pvisor (see Isolation).
	Isolation Isolation
}

const (
	defaultMaxOutput  = 1 << 20
	defaultDrainGrace = 20 * time.Millisecond
)

// Runner executes tool operations for one replay. It owns every process it
// starts: each runs in its own process group, and Close kills every group
// that is still alive (background servers, exec sessions, stragglers).
// A Runner is safe for concurrent use.
type Runner struct {
	opts Options
	tmp  string

	mu       sync.Mutex
	closed   bool
	groups   map[int]struct{}   // pgids that may still have members
	live     map[*proc]struct{} // procs whose output pipes are still open
	sessions map[int]*execSession
	nextID   int
	nextCwd  int
	ctx      context.Context // cancelled by Close; parent of exec sessions
	cancel   context.CancelFunc
	bg       sync.WaitGroup // exec session supervisors
	release  func()         // ends the container view (Isolation.Rootfs)
}

// NewRunner creates a Runner and its private temp directory.
func NewRunner(opts Options) (*Runner, error) {
	if opts.Isolation.Egress != nil && !opts.Isolation.Enabled {
		// Without the init's namespaces the proxy would be advisory only.
		return nil, newErr("runner", "", InvalidArgument, errors.New("an egress proxy needs tool isolation (a network namespace per call)"))
	}
	if len(opts.Shell) == 0 {
		opts.Shell = []string{"/bin/bash", "-c"}
	}
	if opts.MaxOutput == 0 {
		opts.MaxOutput = defaultMaxOutput
	}
	if opts.DrainGrace <= 0 {
		opts.DrainGrace = defaultDrainGrace
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "pvisor-run-")
	if err != nil {
		return nil, fsErr("runner", opts.TempDir, err)
	}
	if roots := opts.Isolation.WriteRoots; roots != nil {
		// The shell session's own files (its cwd and exports) live here.
		opts.Isolation.WriteRoots = append(roots[:len(roots):len(roots)], tmp)
	}
	var release func()
	if iso := &opts.Isolation; iso.Rootfs != "" {
		if !iso.Enabled {
			os.RemoveAll(tmp)
			return nil, newErr("runner", iso.Rootfs, InvalidArgument, errors.New("a container root needs tool isolation (its init enters the root)"))
		}
		// The shell session's own files, at their own path inside too.
		iso.Binds = append(iso.Binds[:len(iso.Binds):len(iso.Binds)], tmp)
		if release, err = SetContainerView(iso.Rootfs, iso.Binds); err != nil {
			os.RemoveAll(tmp)
			return nil, newErr("runner", iso.Rootfs, InvalidArgument, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{
		release:  release,
		opts:     opts,
		tmp:      tmp,
		groups:   map[int]struct{}{},
		live:     map[*proc]struct{}{},
		sessions: map[int]*execSession{},
		nextID:   1000,
		ctx:      ctx,
		cancel:   cancel,
	}, nil
}

// Close kills every process group the runner started that is still alive,
// ends all exec sessions and removes the runner's temp directory. It is
// idempotent. Operations after Close fail with Kind Closed.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	groups := make([]int, 0, len(r.groups))
	for g := range r.groups {
		groups = append(groups, g)
	}
	r.groups = map[int]struct{}{}
	r.mu.Unlock()

	r.cancel() // exec session supervisors kill their own groups
	for _, g := range groups {
		killGroup(g, r.opts.KillGrace)
	}
	if r.opts.KillGrace > 0 {
		time.Sleep(r.opts.KillGrace) // let the SIGKILL follow-ups land before we return
	}
	r.bg.Wait()
	// A process that left the group (setsid daemons) may still hold an
	// output pipe; closing our read ends ends the pumps reading it.
	r.mu.Lock()
	for p := range r.live {
		for _, f := range p.pipes {
			f.Close()
		}
	}
	r.live = map[*proc]struct{}{}
	r.mu.Unlock()
	if r.release != nil {
		r.release()
	}
	return os.RemoveAll(r.tmp)
}

// track registers a started process so Close can kill its group and close
// its pipes; with supervised, Close also waits for one r.bg.Done. It reports
// false (and tracks nothing) once the runner closed.
func (r *Runner) track(p *proc, supervised bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if supervised {
		r.bg.Add(1) // under mu, so never after Close's Wait started
	}
	r.groups[p.pgid] = struct{}{}
	r.live[p] = struct{}{}
	go func() {
		<-p.outEOF
		r.mu.Lock()
		delete(r.live, p)
		r.mu.Unlock()
	}()
	return true
}

// settle forgets a group once nothing is left in it.
func (r *Runner) settle(pgid int) (alive bool) {
	alive = GroupAlive(pgid)
	if !alive {
		r.mu.Lock()
		delete(r.groups, pgid)
		r.mu.Unlock()
	}
	return alive
}

func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// credentialMarkers are the substrings (of upper-cased names) that mark an
// environment variable as a secret, as the existing replay tool strips them.
var credentialMarkers = []string{"API_KEY", "TOKEN", "SECRET", "AUTHORIZATION", "PASSWORD"}

// SanitizeEnv returns env without credentials (names containing API_KEY,
// TOKEN, SECRET, AUTHORIZATION or PASSWORD) and without the variables that
// would redirect tools to another interpreter or cloud (PYTHONHOME,
// PYTHONPATH, VIRTUAL_ENV, CLAUDE_CODE_USE_BEDROCK/VERTEX/FOUNDRY).
func SanitizeEnv(env []string) []string {
	drop := map[string]bool{
		"PYTHONHOME": true, "PYTHONPATH": true, "VIRTUAL_ENV": true,
		"CLAUDE_CODE_USE_BEDROCK": true, "CLAUDE_CODE_USE_VERTEX": true, "CLAUDE_CODE_USE_FOUNDRY": true,
	}
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if drop[up] {
			continue
		}
		for _, m := range credentialMarkers {
			if strings.Contains(up, m) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
