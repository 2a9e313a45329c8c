package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// versionInText finds x.y.z (with a pre-release) not inside a longer dotted
// number, after anything: "codex-cli 0.171.0", "pi v0.73.1".
var versionInText = regexp.MustCompile(`(?:^|[^\d.])(\d+\.\d+\.\d+(?:-[0-9A-Za-z][0-9A-Za-z.-]*)?)`)

// Version probing limits: a CLI that hangs or floods on --version must not
// stall the run or fill memory.
const (
	probeTimeout = 20 * time.Second
	probeMaxOut  = 64 << 10
)

// probeVersion runs `entry --version` with env and returns the first version
// number it prints (some CLIs print on stderr) and the whole output.
func probeVersion(ctx context.Context, entry string, env []string) (version, printed string, err error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, entry, "--version")
	cmd.Env = env
	out := &cappedBuffer{max: probeMaxOut}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	text := strings.TrimSpace(out.String())
	switch {
	case ctx.Err() != nil:
		return "", "", fmt.Errorf("%s --version did not finish within %s", entry, probeTimeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", "", fmt.Errorf("%s --version failed (%v): %s", entry, err, firstLine(text))
		}
		return "", "", fmt.Errorf("%s --version: %v", entry, err)
	}
	m := versionInText.FindStringSubmatch(text)
	if m == nil {
		return "", "", fmt.Errorf("%s --version printed no version number: %q", entry, firstLine(text))
	}
	return m[1], text, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// cappedBuffer keeps the first max bytes written and discards the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
