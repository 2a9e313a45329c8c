package replay

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/result"
)

// Native file names and formats per agent, sub-format and stage, as pVisor
// names them (reference pvisor.md §4.4).
func TestNativeFile(t *testing.T) {
	type row struct{ agent, sub, ext string }
	names := func(r row, version string) [3][2]string {
		var out [3][2]string
		for st := nativePrepared; st <= nativeContinued; st++ {
			n, f, _ := NativeFile(r.agent, r.sub, r.ext, st, version)
			out[st] = [2]string{n, f}
		}
		return out
	}
	for _, tc := range []struct {
		in      row
		version string
		want    [3][2]string
	}{
		{row{"claude-code", "session-jsonl", "jsonl"}, "2.1.332", [3][2]string{
			{"prepared-prefix.jsonl", "claude-code/native-jsonl-2.1.332"},
			{"reconstructed-prefix.jsonl", "claude-code/native-jsonl-2.1.332"},
			{"continued-session.jsonl", "claude-code/native-jsonl-2.1.332"}}},
		{row{"codex", "rollout", "jsonl"}, "0.149.0", [3][2]string{
			{"prepared-prefix.jsonl", "codex/native-jsonl-0.149.0"},
			{"reconstructed-trajectory.jsonl", "codex/native-jsonl-0.149.0"},
			{"continued-trajectory.jsonl", "codex/native-jsonl-0.149.0"}}},
		{row{"opencode", "run-events", "jsonl"}, "1.17.7", [3][2]string{
			{"prepared-prefix.jsonl", "opencode/native-events-jsonl-1.17.7"},
			{"reconstructed-trajectory.jsonl", "opencode/native-events-jsonl-1.17.7"},
			{"continued-trajectory.jsonl", "opencode/native-events-jsonl-1.17.7"}}},
		{row{"opencode", "export", "json"}, "1.17.7", [3][2]string{
			{"prepared-prefix.json", "opencode/session-export-v1"},
			{"opencode-session.json", "opencode/session-export-v1"},
			{"continued-trajectory.json", "opencode/session-export-v1"}}},
		{row{"pi", "events", "jsonl"}, "0.83.0", [3][2]string{
			{"prepared-prefix.jsonl", "pi-agent/native-events-jsonl-0.83.0"},
			{"reconstructed-events.jsonl", "pi-agent/native-events-jsonl-0.83.0"},
			{"continued-events.jsonl", "pi-agent/native-events-jsonl-0.83.0"}}},
		{row{"pi", "session-v3", "jsonl"}, "", [3][2]string{
			{"prepared-prefix.jsonl", "pi-agent/native-session-jsonl"},
			{"reconstructed-events.jsonl", "pi-agent/native-session-jsonl"},
			{"continued-events.jsonl", "pi-agent/native-session-jsonl"}}},
		{row{"openhands", "v0-events", "json"}, "0.53.0", [3][2]string{
			{"prepared-replay-events.json", "openhands/native-json-0.53.0"},
			{"reconstructed-trajectory.json", "openhands/native-json-0.53.0"},
			{"continued-trajectory.json", "openhands/native-json-0.53.0"}}},
		{row{"mini-swe-agent", "mini-swe-agent-1.1", "json"}, "2.4.6", [3][2]string{
			{"prepared-prefix.json", "mini-swe-agent/native-json-2.4.6"},
			{"reconstructed-trajectory.json", "mini-swe-agent/native-json-2.4.6"},
			{"continued-trajectory.json", "mini-swe-agent/native-json-2.4.6"}}},
	} {
		if d := cmp.Diff(tc.want, names(tc.in, tc.version)); d != "" {
			t.Errorf("%v (-want +got):\n%s", tc.in, d)
		}
	}
}

// The model-router key is --session-id, else the run id, never the
// native session id.
func TestRouterSessionID(t *testing.T) {
	for _, tc := range []struct{ sid, want string }{{"", "run-1"}, {"router-key", "router-key"}} {
		r := &run{req: &Request{RunID: "run-1", SessionID: tc.sid}, res: result.New("run-1", "codex")}
		got := r.routerHeaders()
		if d := cmp.Diff(http.Header{"X-Litellm-Session-Id": {tc.want}}, got); d != "" {
			t.Errorf("session id %q (-want +got):\n%s", tc.sid, d)
		}
	}
}
