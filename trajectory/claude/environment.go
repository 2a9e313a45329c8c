package claude

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Claude Code (2.1.3xx) records the machine it runs on in an "environment"
// attachment (snapshot.osVersion, rendered as "OS Version: …" in the system
// context the model sees). Resumed on a machine whose kernel differs, it
// appends a fresh environment context after the boundary, so the first
// request no longer ends at O′N. The sandbox a replay runs in is the
// agent's machine now: like the cwd, the recorded OS version is moved to
// this one's when the session is staged.

// RelocateEnvironment rewrites an environment attachment line's
// osVersion, in the snapshot and in its rendered text, to host; other
// lines, and a line already naming host, are returned as they are. from is
// the recorded version when the line changed.
func RelocateEnvironment(line []byte, host string) (out []byte, from string) {
	if host == "" || !bytes.Contains(line, []byte(`"environment"`)) ||
		gjson.GetBytes(line, "type").Str != "attachment" || gjson.GetBytes(line, "attachment.type").Str != "environment" {
		return line, ""
	}
	old := gjson.GetBytes(line, "attachment.snapshot.osVersion").Str
	if old == "" || old == host {
		return line, ""
	}
	quote := func(s string) []byte {
		b, _ := json.Marshal(s)
		return b[1 : len(b)-1]
	}
	out = bytes.ReplaceAll(line, []byte(`"osVersion":"`+string(quote(old))+`"`), []byte(`"osVersion":"`+string(quote(host))+`"`))
	out = bytes.ReplaceAll(out, append([]byte("OS Version: "), quote(old)...), append([]byte("OS Version: "), quote(host)...))
	return out, old
}
