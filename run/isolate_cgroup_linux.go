package run

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/run/toolinit"
)

// MemoryCgroup is one run's memory cgroup: every tool call's init moves
// itself into it before starting the tool, so all the run's tools together
// (background processes included) stay under Limit, and the kernel's OOM
// killer ends the biggest of them when they do not.
type MemoryCgroup struct {
	Dir   string // the cgroup's directory
	Limit uint64 // bytes
	// Version is 2 for the unified hierarchy (memory.max), 1 for the v1
	// memory controller (memory.limit_in_bytes).
	Version int
	// fd is the v2 cgroup's directory, which each call's init is cloned
	// into (CLONE_INTO_CGROUP): moving a process costs an RCU grace period
	// (milliseconds) per call, being born there costs nothing.
	fd *os.File
}

// cgroupFS is where the hierarchies are mounted; tests point it elsewhere.
var cgroupFS = "/sys/fs/cgroup"

// NewMemoryCgroup creates a cgroup below this process's own, limited to
// limit bytes: cgroup v2 when /sys/fs/cgroup is the unified hierarchy with
// the memory controller, else the v1 memory controller. The error says why
// neither is usable (then RLIMIT_DATA is what is left).
func NewMemoryCgroup(limit uint64) (*MemoryCgroup, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupFS, &st); err != nil {
		return nil, fmt.Errorf("no cgroup file system at %s: %w", cgroupFS, err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("pvisor-%d-%08x", os.Getpid(), rand.Uint32())
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return newCgroupV2(ownCgroup(string(own), ""), name, limit)
	}
	return newCgroupV1(ownCgroup(string(own), "memory"), name, limit)
}

// ownCgroup finds this process's path in /proc/self/cgroup for the v1
// hierarchy that has controller, or the v2 one ("0::/path") when
// controller is "".
func ownCgroup(procCgroup, controller string) string {
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2]
			}
		}
	}
	return "/"
}

func newCgroupV2(own, name string, limit uint64) (*MemoryCgroup, error) {
	parent := filepath.Join(cgroupFS, own)
	ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if !slices.Contains(strings.Fields(string(ctrl)), "memory") {
		// Allowed only where the parent has no processes of its own
		// ("no internal processes"): then pvisor would have to move itself.
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			return nil, fmt.Errorf("cgroup v2: the memory controller is not enabled below %s and cannot be (%v): run pvisor in a cgroup with +memory in cgroup.subtree_control", parent, err)
		}
	}
	c := &MemoryCgroup{Dir: filepath.Join(parent, name), Limit: limit, Version: 2}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := c.write("memory.max", limit); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.write("memory.swap.max", 0) // absent without swap accounting
	if c.fd, err = os.Open(c.Dir); err != nil {
		c.Close()
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	return c, nil
}

func newCgroupV1(own, name string, limit uint64) (*MemoryCgroup, error) {
	root := filepath.Join(cgroupFS, "memory")
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("neither cgroup v2 at %s nor the v1 memory controller at %s", cgroupFS, root)
	}
	c := &MemoryCgroup{Dir: filepath.Join(root, own, name), Limit: limit, Version: 1}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v1 memory: %w", err)
	}
	if err := c.write("memory.limit_in_bytes", limit); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.write("memory.memsw.limit_in_bytes", limit) // absent without swap accounting
	return c, nil
}

func (c *MemoryCgroup) write(file string, v uint64) error {
	if err := os.WriteFile(filepath.Join(c.Dir, file), []byte(strconv.FormatUint(v, 10)), 0); err != nil {
		return fmt.Errorf("cgroup v%d: set %s: %w", c.Version, file, err)
	}
	return nil
}

// Mechanism names the limit for the result.
func (c *MemoryCgroup) Mechanism() string {
	if c.Version == 2 {
		return "cgroup-v2"
	}
	return "cgroup-v1-memory"
}

// OOMKills is how many processes the OOM killer has ended in the cgroup.
func (c *MemoryCgroup) OOMKills() uint64 {
	f, err := c.openEvents()
	if err != nil {
		return 0
	}
	defer f.Close()
	return oomKills(f)
}

// openEvents opens the file that counts OOM kills: the tool init keeps it
// open, because it detaches the cgroup file systems from the tool's view.
func (c *MemoryCgroup) openEvents() (*os.File, error) {
	file := "memory.events"
	if c.Version == 1 {
		file = "memory.oom_control"
	}
	return os.Open(filepath.Join(c.Dir, file))
}

// oomKills reads the oom_kill count from an open events file, afresh.
func oomKills(f *os.File) uint64 {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0
	}
	return toolinit.OOMKillCount(string(buf[:n]))
}

// Close kills what is left in the cgroup and removes it. The Runner's
// Close has killed the tools' namespaces already; this catches stragglers.
func (c *MemoryCgroup) Close() error {
	if c.fd != nil {
		c.fd.Close()
	}
	var err error
	for range 50 {
		if err = os.Remove(c.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if data, rerr := os.ReadFile(filepath.Join(c.Dir, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(data)) {
				if pid, perr := strconv.Atoi(f); perr == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.Dir, err)
}
