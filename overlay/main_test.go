//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Environment of the re-executed test binary.
const (
	envScratch   = "OVERLAY_TEST_SCRATCH"    // directory outside the workspace for reports
	envPanicInit = "OVERLAY_TEST_PANIC_INIT" // init panics once the worker is ready
	envBreakInit = "OVERLAY_TEST_BREAK"      // init removes the upper dir before mounting
	envNoPrivate = "OVERLAY_TEST_NO_PRIVATE" // init skips making / private (control run)
	envOuter     = "OVERLAY_TEST_OUTER"      // propagation helper, see TestMountDoesNotPropagate
	envPlain     = "OVERLAY_TEST_PLAIN"      // benchmark baseline: exit at once
	envRunner    = "OVERLAY_TEST_RUNNER"     // a pvisor that calls Run, to be killed
	envTool      = "OVERLAY_TEST_TOOL"       // a replayed tool: detaches these shared binds, writes its args
	envToolView  = "OVERLAY_TEST_TOOL_VIEW"  // the layout whose layers the tool must not reach
	envNoRoot    = "OVERLAY_TEST_NO_ROOT"    // init builds no root view (control run)
	envBreakRoot = "OVERLAY_TEST_BREAK_ROOT" // the kernel refuses the root view's overlay
)

// TestMain is also the main of every re-executed child: the test binary is
// the "pvisor" that Run starts again.
func TestMain(m *testing.M) {
	if os.Getenv(envPlain) != "" {
		os.Exit(0)
	}
	if shared, ok := os.LookupEnv(envTool); ok {
		os.Exit(toolHelper(shared, os.Args[1:]))
	}
	if IsChild() {
		installInitHooks()
		ChildMain(func() int { return runScenario(os.Args[1:]) })
	}
	if raw := os.Getenv(envOuter); raw != "" {
		os.Exit(outerHelper(raw))
	}
	if raw := os.Getenv(envRunner); raw != "" {
		os.Exit(runnerHelper(raw))
	}
	os.Exit(m.Run())
}

func installInitHooks() {
	scratch := os.Getenv(envScratch)
	if os.Getenv(envNoPrivate) != "" {
		makePrivate = false
		rootViewOff = true // pivot_root refuses a shared mount
	}
	if os.Getenv(envNoRoot) != "" {
		rootViewOff = true
	}
	initHook = func(point string) {
		switch {
		case point == "mount" && os.Getenv(envBreakInit) != "":
			os.RemoveAll(childSpec.Layout.Upper)
		case point == "root" && os.Getenv(envBreakRoot) != "":
			// A file where the first work dir goes: the mount fails.
			os.MkdirAll(childSpec.Layout.RootWork, 0o700)
			os.WriteFile(filepath.Join(childSpec.Layout.RootWork, "0"), nil, 0o600)
		case point == "started" && os.Getenv(envPanicInit) != "":
			waitFile(filepath.Join(scratch, "ready"), 20*time.Second)
			panic("init panics on purpose")
		}
	}
}

// runScenario is the worker: args name what to do in the merged view.
func runScenario(args []string) int {
	cfg, _, ok := Current()
	if !ok {
		fmt.Fprintln(os.Stderr, "worker without overlay")
		return 90
	}
	scratch := os.Getenv(envScratch)
	ws := cfg.Path
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "scenario %v: %v\n", args, err)
		return 91
	}
	if len(args) == 0 {
		return fail(errors.New("no scenario"))
	}
	switch args[0] {
	case "noop":
		return 0
	case "write": // args[1] names a file to create
		return exitOnErr(os.WriteFile(filepath.Join(ws, args[1]), []byte(args[1]), 0o644), fail)
	case "isolate":
		if err := os.WriteFile(filepath.Join(ws, "new.txt"), []byte("new\n"), 0o644); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed\n"), 0o644); err != nil {
			return fail(err)
		}
		if err := writeJSON(filepath.Join(scratch, "inside.json"), observeInside(ws)); err != nil {
			return fail(err)
		}
		touch(filepath.Join(scratch, "ready"))
		if !waitFile(filepath.Join(scratch, "release"), 20*time.Second) {
			return fail(errors.New("never released"))
		}
		return 0
	case "mutate":
		if err := mutate(ws); err != nil {
			return fail(err)
		}
		snap, err := snapshot(ws)
		if err != nil {
			return fail(err)
		}
		return exitOnErr(writeJSON(filepath.Join(scratch, "merged.json"), snap), fail)
	case "tool": // a tool in its own mount namespace writes args[1:]
		shared, view, missing := ToolView()
		raw, _ := json.Marshal(shared)
		_, layout, _ := Current()
		rawLayout, _ := json.Marshal(layout)
		tool := exec.Command("/proc/self/exe", args[1:]...)
		tool.Env = append(os.Environ(), envTool+"="+string(raw))
		if view {
			tool.Env = append(tool.Env, envToolView+"="+string(rawLayout))
		}
		tool.Dir = ws
		tool.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		out, err := tool.CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("tool: %v: %s", err, out))
		}
		return exitOnErr(writeJSON(filepath.Join(scratch, "tool.json"), map[string]string{"view": fmt.Sprint(view), "missing": missing, "out": string(out)}), fail)
	case "toolbench": // args[1] tool calls, timed into scratch/args[2]
		n, _ := strconv.Atoi(args[1])
		shared, _, _ := ToolView()
		raw, _ := json.Marshal(shared)
		var times []time.Duration
		for range n {
			start := time.Now()
			tool := exec.Command("/proc/self/exe", "true")
			tool.Env = append(os.Environ(), envTool+"="+string(raw))
			tool.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
			if out, err := tool.CombinedOutput(); err != nil {
				return fail(fmt.Errorf("%v: %s", err, out))
			}
			times = append(times, time.Since(start))
		}
		return exitOnErr(writeJSON(filepath.Join(scratch, args[2]), times), fail)
	case "compose":
		seen := map[string]string{}
		for _, name := range []string{"a.txt", "c-only.txt", "lib/util.txt"} {
			data, err := os.ReadFile(filepath.Join(ws, name))
			if err != nil {
				return fail(err)
			}
			seen[name] = string(data)
		}
		if err := writeJSON(filepath.Join(scratch, "seen.json"), seen); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "lib/util.txt"), []byte("u2\n"), 0o644); err != nil {
			return fail(err)
		}
		return exitOnErr(os.Remove(filepath.Join(ws, "c-only.txt")), fail)
	case "linger":
		// A file in the merged view and a session leader that outlives a
		// process-group kill; then wait, panic or exit as args[1] says.
		if err := os.WriteFile(filepath.Join(ws, "lingered.txt"), []byte("kept for inspection\n"), 0o644); err != nil {
			return fail(err)
		}
		sleeper := exec.Command("sleep", "300")
		sleeper.Dir = ws
		sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := sleeper.Start(); err != nil {
			return fail(err)
		}
		ns, err := os.Readlink("/proc/self/ns/mnt")
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, "ns"), []byte(ns), 0o644); err != nil {
			return fail(err)
		}
		touch(filepath.Join(scratch, "ready"))
		switch args[1] {
		case "panic":
			panic("worker panics on purpose")
		case "exit3":
			return 3
		}
		time.Sleep(time.Minute)
		return 92
	}
	return fail(errors.New("unknown scenario"))
}

// toolHelper does what run's tool init does in a view (detach the
// worker's shared binds), then changes each path in args ("rm:path"
// removes it) and tries to write into the layers (hidden: it must fail).
// It reports on stdout: files it wrote would land in the view.
func toolHelper(shared string, args []string) int {
	runtime.LockOSThread()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Println("private:", err)
		return 1
	}
	var dirs []string
	json.Unmarshal([]byte(shared), &dirs)
	if err := DetachShared(dirs); err != nil {
		fmt.Println(err)
		return 1
	}
	if len(args) == 1 && args[0] == "true" { // a tool call as the benchmark times it
		if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
			fmt.Println("proc:", err)
			return 1
		}
		err := unix.Exec("/bin/true", []string{"true"}, nil)
		fmt.Println(err)
		return 1
	}
	if os.Getenv(envToolView) != "" {
		l := Layout{}
		json.Unmarshal([]byte(os.Getenv(envToolView)), &l)
		if err := os.WriteFile(filepath.Join(l.RootUpper, "upper-reached"), nil, 0o644); err == nil {
			fmt.Println("wrote into the layers")
			return 1
		}
	}
	for _, p := range args {
		var err error
		if rm, ok := strings.CutPrefix(p, "rm:"); ok {
			err = os.Remove(rm)
		} else {
			err = os.WriteFile(p, []byte("tool\n"), 0o644)
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
	}
	fmt.Println("changed", len(args))
	return 0
}

func exitOnErr(err error, fail func(error) int) int {
	if err != nil {
		return fail(err)
	}
	return 0
}

// inside is what the worker observed about its own view.
type inside struct {
	Cwd       string
	FSType    string // type of the top mount at the workspace
	Entries   []string
	PIDs      int // processes visible in /proc: init and the worker
	EnvMarker bool
}

func observeInside(ws string) inside {
	var in inside
	in.Cwd, _ = os.Getwd()
	if mounts, err := readMountinfo(); err == nil {
		if at := mountsAt(mounts, ws); len(at) > 0 {
			in.FSType = at[len(at)-1].FSType
		}
	}
	in.Entries, _ = readNames(".")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	in.PIDs = len(procs)
	_, in.EnvMarker = os.LookupEnv(envSpec)
	return in
}

// node is one entry of a tree snapshot: everything apply must reproduce.
// Directory times are left out, since creating entries changes them.
type node struct {
	Type   FileType
	Perm   uint32
	UID    int
	GID    int
	Size   int64  `json:",omitempty"`
	SHA256 string `json:",omitempty"`
	Target string `json:",omitempty"`
	Mtime  int64  `json:",omitempty"`
	Nlink  uint64 `json:",omitempty"`
}

func snapshot(root string) (map[string]node, error) {
	out := map[string]node{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n := node{Type: fileType(st.Mode), Perm: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid)}
		switch n.Type {
		case TypeFile:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			n.Size, n.SHA256, n.Mtime, n.Nlink = st.Size, hex.EncodeToString(sum[:]), st.Mtim.Nano(), uint64(st.Nlink)
		case TypeSymlink:
			n.Target, _ = os.Readlink(p)
		}
		out[filepath.ToSlash(rel)] = n
		return nil
	})
	return out, err
}

func mustSnapshot(tb testing.TB, root string) map[string]node {
	tb.Helper()
	s, err := snapshot(root)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func writeJSON(p string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func readJSON(tb testing.TB, p string, v any) {
	tb.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatal(err)
	}
}

func touch(p string) { os.WriteFile(p, nil, 0o644) }

func waitFile(p string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// childEnv is the environment for re-executed test binaries. Under -race a
// process sleeps a second at exit waiting for late race reports; a run has
// two such processes, so the sleep is switched off.
func childEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
}

// requireOverlay skips only where overlayfs cannot work at all.
func requireOverlay(tb testing.TB) {
	tb.Helper()
	if ok, _ := hasCapability(capSysAdmin); !ok {
		tb.Skip("needs CAP_SYS_ADMIN (run the tests as root)")
	}
	if !kernelHasOverlay() {
		tb.Skip("kernel has no overlay filesystem")
	}
}

// inPrivateNS runs fn on an OS thread that has its own private mount
// namespace. The thread is never unlocked, so Go discards it (and the
// namespace) when fn returns. The main thread is avoided because Go keeps it.
func inPrivateNS(tb testing.TB, fn func() error) {
	tb.Helper()
	errc := make(chan error, 1)
	var run func()
	run = func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			done := make(chan struct{})
			go func() { run(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("panic: %v", r)
			}
		}()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- err
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}
	go run()
	if err := <-errc; err != nil {
		tb.Fatal(err)
	}
}

// writeTree creates files from "path": "content" (a trailing "/" makes a
// directory, "->target" a symlink).
func writeTree(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(strings.TrimPrefix(content, "->"), full)
		default:
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// processesInNamespace lists PIDs (host view) whose mount namespace is ns.
func processesInNamespace(ns string) []string {
	var out []string
	links, _ := filepath.Glob("/proc/[0-9]*/ns/mnt")
	for _, l := range links {
		if got, err := os.Readlink(l); err == nil && got == ns {
			out = append(out, strings.Split(l, "/")[2])
		}
	}
	return out
}

// hostMountsAt reads the test process's own mount table.
func hostMountsAt(tb testing.TB, p string) []mountEntry {
	tb.Helper()
	mounts, err := readMountinfo()
	if err != nil {
		tb.Fatal(err)
	}
	return mountsAt(mounts, p)
}
