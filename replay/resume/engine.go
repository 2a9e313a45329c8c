package resume

import (
	"os"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// The engine's parts resume and fork reuse come from package replay (the
// prefix replay, upstreams, run directories); these are the small ones.

func fail(category, format string, args ...any) *result.Failure {
	return result.Fail(category, format, args...)
}

func configErr(format string, args ...any) *result.Failure {
	return result.Fail(result.ConfigurationError, format, args...)
}

// launcherOf is the launcher of agent: its binary and protocol serve resume
// and fork too.
func launcherOf(agent string) (launch.Launcher, bool) {
	if a, ok := agents.Get(agent); ok && a.Launcher != nil {
		return a.Launcher, true
	}
	return nil, false
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
