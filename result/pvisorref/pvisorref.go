// Package pvisorref finds pVisor 0.3.1, the tool whose contract pvisor
// keeps (PyPI pvisor-sandbox), for the benchmarks that report pvisor's
// cost as a ratio of its cost on the same input.
package pvisorref

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Version is the release testdata/e2e/install-pvisor-sandbox.sh installs.
const Version = "0.3.1"

// Bin is pVisor's replay binary: $PVISOR_SANDBOX_BIN, else where the
// install script puts it under the repository's .e2e/ ($PVISOR_E2E_DIR
// overrides that directory, as for the e2e tests). When it is missing, the
// second value says what to run instead.
func Bin() (string, string) {
	bin := os.Getenv("PVISOR_SANDBOX_BIN")
	if bin == "" {
		dir := os.Getenv("PVISOR_E2E_DIR")
		if dir == "" {
			_, self, _, _ := runtime.Caller(0)
			dir = filepath.Join(filepath.Dir(self), "..", "..", ".e2e")
		}
		bin = filepath.Join(dir, "pvisor-sandbox@"+Version, "bin", "pvisor-replay")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", "pVisor " + Version + " is not installed (" + err.Error() + "): the comparison with it is skipped; " +
			"run testdata/e2e/install-pvisor-sandbox.sh (make bench does) or set PVISOR_SANDBOX_BIN"
	}
	return bin, ""
}

// Refusal runs pVisor once with args and returns why it refused the
// input ("" when its result line has no failure): the benchmarks compare
// only what pVisor accepts.
func Refusal(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).Output()
	var res struct {
		Failure *struct {
			Category string `json:"category"`
			Message  string `json:"message"`
		} `json:"failure"`
	}
	if jerr := json.Unmarshal(lastLine(out), &res); jerr != nil {
		if err == nil {
			err = jerr
		}
		return "no result line (" + err.Error() + ")"
	}
	if res.Failure != nil {
		return res.Failure.Category + ": " + res.Failure.Message
	}
	return ""
}

func lastLine(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return b[i+1:]
		}
	}
	return b
}
