package resume

import (
	"path/filepath"
	"strings"
)

// systemDirs are where no agent's home is: a restore writes the session
// (Claude's .claude/projects/…, Codex's .codex/sessions/…) below the home
// and moves what is there aside, so `resume --bundle --home /` wrote
// /.claude/… (issue 24). A user's own home (/root, /home/u) or a sandbox's
// scratch home stays allowed; the filesystem root, these directories and
// anything below them are refused (not /var: /var/lib/jenkins is a home).
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
	"/run", "/sbin", "/sys", "/usr"}

// checkTargetHome refuses a --home to restore into that is the root of the
// filesystem or a system directory, by its real path (a symlink to / is /).
func checkTargetHome(home string) error {
	abs, err := filepath.Abs(home)
	if err != nil {
		return configErr("--home %s: %v", home, err)
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	if real == "/" {
		return configErr("--home %s is the filesystem root: a restore would write %s there; pass the HOME the agent should use (a new directory, or your own home)", home, "/.claude, /.codex or /.pi")
	}
	for _, d := range systemDirs {
		if real == d || strings.HasPrefix(real, d+"/") {
			return configErr("--home %s is %s, a system directory (below %s): pass the HOME the agent should use (a new directory, or your own home)", home, real, d)
		}
	}
	return nil
}
