package replay

// pVisor's managed-run options (its outer `pvisor run`): what pvisor
// builds is accepted, what it does not is refused with the reason, never
// parsed and ignored.

// Executors and file policies, as pVisor names them.
const (
	ExecutorHost  = "host"
	PolicyObserve = "observe"
	PolicyEnforce = "enforce"
)

// checkRunOptions validates [run] executor, policy and safe.
func (c RunConfig) checkRunOptions() error {
	switch c.Executor {
	case "", ExecutorHost:
	case "container":
		return configErr("--executor container is not built in pvisor: tools run on this host (under tool isolation as root); use --executor host (the default), or run pvisor inside the container")
	case "vm", "kvm":
		return configErr("--executor %s is not built in pvisor (no microVM here); use --executor host (the default), or run pvisor inside the VM", c.Executor)
	default:
		return configErr("--executor %q: must be host, container or vm", c.Executor)
	}
	switch c.Policy {
	case "", PolicyObserve:
	case PolicyEnforce:
		return configErr("--policy enforce is not built in pvisor: writes outside the workspace are recorded (metadata.writes_outside_workspace, --policy observe) but not denied; use --policy observe, and --overlayfs-path to keep such writes off the host")
	default:
		return configErr("--policy %q: must be observe or enforce", c.Policy)
	}
	if c.Safe {
		return configErr("--safe is not built in pvisor: its preset needs --policy enforce, which is not built; compose what is: --overlayfs-path DIR --overlayfs-commit drop --overlaynet proxy --overlaynet-policy allowlist --overlaynet-allow HOST:443")
	}
	return nil
}

// runOptionsMeta records the executor and file policy that applied, when
// the request named them.
func (r *run) runOptionsMeta() {
	c := r.req.Run
	if c.Executor == "" && c.Policy == "" {
		return
	}
	m := map[string]any{"executor": ExecutorHost, "policy": PolicyObserve}
	// observe is what pvisor always does: file tools' writes outside the
	// workspace are listed and make the result degraded.
	m["policy_records"] = "writes_outside_workspace"
	r.res.Metadata["run_options"] = m
}
