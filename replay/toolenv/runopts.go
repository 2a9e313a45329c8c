package toolenv

// pVisor's managed-run options (its outer `pvisor run`): what pvisor
// builds is accepted, what it does not is refused with the reason, never
// parsed and ignored.

// Executors and file policies, as pVisor names them.
const (
	ExecutorHost  = "host"
	PolicyObserve = "observe"
	PolicyEnforce = "enforce"
)

// CheckRunOptions validates [run] executor, policy and safe.
func CheckRunOptions(executor, policy string, safe bool) error {
	switch executor {
	case "", ExecutorHost:
	case "container":
		return configErr("--executor container is not built in pvisor: tools run on this host (under tool isolation as root); use --executor host (the default), or run pvisor inside the container")
	case "vm", "kvm":
		return configErr("--executor %s is not built in pvisor (no microVM here); use --executor host (the default), or run pvisor inside the VM", executor)
	default:
		return configErr("--executor %q: must be host, container or vm", executor)
	}
	switch policy {
	case "", PolicyObserve:
	case PolicyEnforce:
		return configErr("--policy enforce is not built in pvisor: writes outside the workspace are recorded (metadata.writes_outside_workspace, --policy observe) but not denied; use --policy observe, and --overlayfs-path to keep such writes off the host")
	default:
		return configErr("--policy %q: must be observe or enforce", policy)
	}
	if safe {
		return configErr("--safe is not built in pvisor: its preset needs --policy enforce, which is not built; compose what is: --overlayfs-path DIR --overlayfs-commit drop --overlaynet proxy --overlaynet-policy allowlist --overlaynet-allow HOST:443")
	}
	return nil
}

// RunOptionsMeta is what of the executor and file policy applied, for the
// result's metadata; nil when the request named neither.
func RunOptionsMeta(executor, policy string) map[string]any {
	if executor == "" && policy == "" {
		return nil
	}
	// observe is what pvisor always does: file tools' writes outside the
	// workspace are listed and make the result degraded.
	return map[string]any{"executor": ExecutorHost, "policy": PolicyObserve, "policy_records": "writes_outside_workspace"}
}
