// Package overlay runs part of pvisor over an overlayfs-managed workspace
// (--overlayfs-path, --overlayfs-compose, --overlayfs-commit; TOML
// [overlayfs] path, compose, commit).
//
// The workspace directory becomes the top lower layer, optional compose
// directories are read-only layers under it, and the upper and work layers
// live in the run's state dir (see NewLayout). The merged view is mounted at
// the workspace's own path, so tools and agents find the files where they
// expect them, but only inside private mount and PID namespaces: the host
// never sees the mount, and it disappears with the namespaces however the
// run ends (normal exit, SIGINT, SIGTERM, SIGKILL, a panic, or pvisor
// itself being killed).
//
// # Mechanism
//
// unshare(CLONE_NEWNS) applies to one OS thread, and a Go program runs on
// many, so the namespaces are made by re-executing the binary:
//
//	pvisor (Run)                 host namespaces; waits, forwards SIGINT/SIGTERM/SIGHUP
//	└─ pvisor (init, PID 1)      clone(CLONE_NEWNS|CLONE_NEWPID): makes / private,
//	   │                         mounts /proc and the overlay, reaps orphans
//	   └─ pvisor (worker)        runs the work function in the merged view
//	      └─ agents, tools, …
//
// Init is PID 1 of its PID namespace. When it exits, the kernel kills every
// process left in the namespace before Run's wait returns, so nothing can
// write to the upper layer once Run has returned, and the mount namespace
// (with the overlay) is gone. Init also has Pdeathsig=SIGKILL, so the same
// happens when pvisor dies.
//
// # Using it from main
//
//	func main() {
//		if overlay.IsChild() {
//			overlay.ChildMain(func() int { return realMain(os.Args) })
//		}
//		os.Exit(realMain(os.Args))
//	}
//
// realMain, when asked for an overlay and not already InNamespace, calls
//
//	cfg := overlay.Config{Path: ws, Compose: dirs, Commit: mode}
//	layout := overlay.NewLayout(stateDir)
//	exit, err := overlay.Run(ctx, cfg, layout, overlay.Options{Args: os.Args, ...})
//	report, err := overlay.Commit(cfg, layout) // after Run, in the parent
//
// and inside (InNamespace) it does the real work; Current returns the
// configuration there. The worker's environment no longer holds the marker
// variable, so processes it starts behave normally.
//
// # Outside the workspace
//
// Before starting the worker, init also mounts at Layout.Root a view of
// the whole file tree (buildRootView) and makes it its root (pivot_root),
// so the worker and everything it starts run in it: / and every other
// writable filesystem of the mount table as an overlay with its own upper
// layer under Layout.RootUpper, read-only filesystems and file bind mounts
// bound read-only, /dev and /sys bound read-only, a fresh /proc, the merged
// workspace bound at its path, and Layout.Dir hidden under an empty
// read-only tmpfs. Options.Shared (the state and output dirs) are bound in
// for real on top, so pvisor's own files are real; a replayed tool's init
// detaches them in its own mount namespace (ToolView, DetachShared), so the
// tool's writes there land in the upper layer. OutsideChanges lists the
// view's changes with absolute paths; Commit reports them and never
// applies them (drop removes them). When the kernel refuses part of the
// view, nothing of it stays mounted, the worker runs in the real tree as
// before, and ToolView says why.
//
// # Reading the upper layer
//
// Changes compares the upper layer with the lower stack: added and modified
// entries, deletions (whiteouts, i.e. 0/0 character devices), and opaque
// directories (xattr trusted.overlay.opaque=y), whose hidden entries are
// listed as deleted. The mount switches off redirect_dir, metacopy and index
// so that the upper layer always holds plain files that Commit can copy.
//
// # Limits
//
//   - Needs CAP_SYS_ADMIN in the initial user namespace and a kernel with
//     overlayfs; the state dir must not be on overlayfs itself (as inside
//     most Docker containers: use a tmpfs or a volume), nor inside a layer.
//   - Mount points inside the workspace are refused: overlayfs does not
//     include them.
//   - Writes that reach the workspace by another path (a bind mount of it
//     elsewhere, a host process) bypass the overlay; such changes to the
//     lower layer while mounted are undefined behaviour in overlayfs.
//   - Renaming a directory that came from a lower layer fails with EXDEV
//     (redirect_dir is off); mv and most tools fall back to copying.
//   - Changes ignores extended-attribute-only changes; Commit copies
//     extended attributes of what it writes.
//   - Hard links among files the run wrote stay hard links after apply; a
//     new link to a workspace file becomes a copy.
package overlay
