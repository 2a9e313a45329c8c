package toolenv

// pVisor's managed-run options (its outer `pvisor run`): what pvisor
// builds is accepted, what it does not is refused with the reason, never
// parsed and ignored.

import (
	"fmt"

	toolrun "github.com/pvisor/pvisor/run"
)

// Executors and file policies, as pVisor names them.
const (
	ExecutorHost  = "host"
	PolicyObserve = "observe"
	PolicyEnforce = "enforce"
)

// CheckRunOptions validates [run] executor and policy (safe is expanded
// into them and the rest before, see replay's applySafe).
func CheckRunOptions(executor, policy string, c ContainerConfig) error {
	switch executor {
	case "", ExecutorHost, ExecutorContainer:
	case "vm", "kvm":
		return configErr("--executor %s is not built in pvisor (no microVM here); use --executor container with --container-rootfs DIR or --container-image DIR, --executor host (the default), or run pvisor inside the VM", executor)
	default:
		return configErr("--executor %q: must be host, container or vm", executor)
	}
	if err := checkContainer(executor, c); err != nil {
		return err
	}
	switch policy {
	case "", PolicyObserve:
	case PolicyEnforce:
		if _, err := toolrun.LandlockABI(); err != nil {
			return configErr("--policy enforce cannot deny shell tools' writes here: %v; use --policy observe (writes outside the workspace recorded), and --overlayfs-path to keep them off the host", err)
		}
	default:
		return configErr("--policy %q: must be observe or enforce", policy)
	}
	return nil
}

// RunOptionsMeta is what of the executor and file policy applied, for the
// result's metadata; nil when the request named neither.
func RunOptionsMeta(executor, policy string) map[string]any {
	if executor == "" && policy == "" {
		return nil
	}
	m := runOptionsMeta(policy)
	if executor == ExecutorContainer {
		// Container adds the root it ran in.
		m["executor"] = ExecutorContainer
	}
	return m
}

func runOptionsMeta(policy string) map[string]any {
	// observe is what pvisor always does: file tools' writes outside the
	// workspace are listed and make the result degraded.
	if policy == PolicyEnforce {
		abi, _ := toolrun.LandlockABI()
		return map[string]any{"executor": ExecutorHost, "policy": PolicyEnforce, "policy_denies": "writes_denied",
			"enforced_by": map[string]any{"shell_tools": fmt.Sprintf("landlock abi %d", abi), "file_tools": "resolved path check"},
			"write_roots": append([]string{"workspace", "the tool runner's temp dir"}, toolrun.DeviceWriteRoots...)}
	}
	return map[string]any{"executor": ExecutorHost, "policy": PolicyObserve, "policy_records": "writes_outside_workspace"}
}
