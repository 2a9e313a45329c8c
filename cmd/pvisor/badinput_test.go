package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/result"
)

// Minimal Claude Code session: a prompt, one Bash call and its result, a
// text-only answer. Cases below corrupt it one way each.
const claudeBase = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":"list files"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}
`

const codexBase = `{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"/w","cli_version":"0.41.0"}}
{"timestamp":"2025-09-24T19:22:21.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}}
{"timestamp":"2025-09-24T19:22:22.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}
{"timestamp":"2025-09-24T19:22:23.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"a.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}}
{"timestamp":"2025-09-24T19:22:24.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`

type badCase struct {
	name     string
	agent    string
	content  string                 // the trajectory; "" with file=="" means none is written
	file     string                 // a testdata file to copy instead of content
	setup    func(dir, traj string) // extra preparation (symlinks, configs)
	args     []string               // extra args; {traj}, {dir} are substituted
	raw      []string               // full argument list instead of the default
	wantExit int
	wantCat  string // failure category, "" for success
	wantMsg  string // substring of the failure message
}

func replaceLine(s string, n int, line string) string {
	lines := strings.SplitAfter(s, "\n")
	lines[n-1] = line + "\n"
	return strings.Join(lines, "")
}

func badCases() []badCase {
	tooLong := `{"type":"user","uuid":"u1","parentUuid":null,"message":{"content":"` + strings.Repeat("x", 10<<20) + "\n"
	return []badCase{
		{name: "empty file", agent: "claude-code", content: "", wantExit: 10, wantCat: "trajectory_error", wantMsg: "empty"},
		{name: "only whitespace", agent: "claude-code", content: "\n\n  \n", wantExit: 10, wantCat: "trajectory_error"},
		{name: "torn tail tolerated", agent: "claude-code", content: claudeBase + `{"type":"assistant","uuid":"a3","par`, wantExit: 0},
		{name: "truncated before boundary", agent: "claude-code", content: claudeBase[:strings.Index(claudeBase, `{"type":"user","uuid":"u2"`)+40], wantExit: 10, wantCat: "trajectory_error", wantMsg: "after-step 1"},
		{name: "non-UTF-8", agent: "claude-code", content: replaceLine(claudeBase, 2, "{\"type\":\"assistant\",\"x\":\"\xff\xfe\"}"), wantExit: 10, wantMsg: "line 2: not valid UTF-8"},
		{name: "binary garbage", agent: "claude-code", content: "\x00\x01\x02\x03garbage\n", wantExit: 10, wantCat: "trajectory_error"},
		{name: "10 MB line", agent: "claude-code", content: claudeBase + tooLong, wantExit: 10, wantMsg: "line 5"},
		{name: "line not JSON", agent: "claude-code", content: replaceLine(claudeBase, 3, "{not json"), wantExit: 10, wantMsg: "line 3"},
		{name: "line is an array", agent: "claude-code", content: replaceLine(claudeBase, 3, "[1,2]"), wantExit: 10, wantMsg: "line 3"},
		{name: "duplicate uuid", agent: "claude-code", content: strings.Replace(claudeBase, `"uuid":"u2"`, `"uuid":"a1"`, 1), wantExit: 10, wantMsg: "a1"},
		{name: "parent cycle", agent: "claude-code", content: strings.Replace(claudeBase, `"uuid":"u1","parentUuid":null`, `"uuid":"u1","parentUuid":"a2"`, 1), wantExit: 10, wantMsg: "cycle"},
		{name: "missing parent", agent: "claude-code", content: strings.Replace(claudeBase, `"parentUuid":"u2"`, `"parentUuid":"nope"`, 1), wantExit: 10, wantMsg: "nope"},
		{name: "tool_result without tool_use", agent: "claude-code", content: strings.Replace(claudeBase, `"tool_use_id":"t1"`, `"tool_use_id":"t9"`, 1), wantExit: 10, wantMsg: "t9"},
		{name: "boundary 0", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "0"}, wantExit: 2, wantCat: "configuration_error", wantMsg: "numbered from 1"},
		{name: "boundary past the end", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "9"}, wantExit: 10, wantMsg: "after-step 9: trajectory has 1 complete steps"},
		{name: "boundary on text-only session", agent: "claude-code", content: strings.SplitAfter(claudeBase, "\n")[0] + strings.Replace(strings.SplitAfter(claudeBase, "\n")[3], `"parentUuid":"u2"`, `"parentUuid":"u1"`, 1), wantExit: 10, wantMsg: "0 complete steps"},
		{name: "wrong agent", agent: "claude-code", content: codexBase, wantExit: 10, wantMsg: "looks like a codex session"},
		{name: "unknown agent", agent: "gemini", content: claudeBase, wantExit: 2, wantMsg: "unknown agent"},
		{name: "missing trajectory file", agent: "claude-code", raw: []string{"--prepare-only", "--agent", "claude-code", "--trajectory", "{dir}/nope.jsonl", "--after-step", "1"}, wantExit: 2, wantCat: "configuration_error", wantMsg: "trajectory does not exist"},
		{name: "symlink as trajectory", agent: "claude-code", content: claudeBase, setup: func(dir, traj string) { os.Symlink(traj, filepath.Join(dir, "link.jsonl")) },
			raw: []string{"--prepare-only", "--agent", "claude-code", "--trajectory", "{dir}/link.jsonl", "--after-step", "1", "--state-dir", "{dir}/state", "--output-dir", "{dir}/out"}, wantExit: 10, wantMsg: "symbolic link"},
		{name: "directory as trajectory", agent: "claude-code", raw: []string{"--prepare-only", "--agent", "claude-code", "--trajectory", "{dir}", "--after-step", "1"}, wantExit: 2, wantCat: "configuration_error", wantMsg: "is a directory"},
		{name: "conflicting modes", agent: "claude-code", content: claudeBase, args: []string{"--replay-only"}, wantExit: 2, wantMsg: "mutually exclusive"},
		{name: "unknown flag", agent: "claude-code", content: claudeBase, args: []string{"--after-stpe", "1"}, wantExit: 2, wantMsg: "after-stpe"},
		{name: "after-step not a number", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "two"}, wantExit: 2, wantMsg: "after-step"},
		{name: "after-step hexadecimal", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "0x1"}, wantExit: 2, wantMsg: `"0x1" is not a decimal integer`},
		{name: "after-step with underscore", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "1_0"}, wantExit: 2, wantMsg: `"1_0" is not a decimal integer`},
		{name: "after-step leading zero is decimal", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "010"}, wantExit: 10, wantMsg: "after-step 10:"},
		{name: "after-step leading zero in range", agent: "claude-code", content: claudeBase, args: []string{"--after-step", "01"}, wantExit: 0},
		{name: "max-steps octal-looking", agent: "claude-code", content: claudeBase, args: []string{"--max-steps", "0o7"}, wantExit: 2, wantMsg: `"0o7" is not a decimal integer`},
		{name: "timeout-ms hexadecimal", agent: "claude-code", content: claudeBase, args: []string{"--timeout-ms", "0x10"}, wantExit: 2, wantMsg: `"0x10"`},
		{name: "max-steps zero", agent: "claude-code", content: claudeBase, args: []string{"--max-steps", "0"}, wantExit: 2, wantMsg: "max_steps must be positive"},
		{name: "TOML max_steps zero", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\nmax_steps = 0\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "max_steps must be positive"},
		{name: "pi event stream refused before any tool runs", agent: "pi", file: "../../testdata/trajectories/pi/takopi_pi_stream_success.jsonl",
			raw:      []string{"--replay-only", "--agent", "pi", "--trajectory", "{traj}", "--after-step", "1", "--workspace", "{dir}", "--state-dir", "{dir}/state", "--output-dir", "{dir}/out"},
			wantExit: 11, wantCat: "unsupported_version", wantMsg: "`pi --mode json` output"},
		{name: "claude session with a codex rollout appended", agent: "claude-code", content: claudeBase + codexBase, wantExit: 10, wantCat: "trajectory_error", wantMsg: "line 5: a Codex rollout record"},
		{name: "codex rollout with a claude session appended", agent: "codex", content: codexBase + claudeBase, wantExit: 10, wantCat: "trajectory_error", wantMsg: "line 6: a Claude Code entry"},
		{name: "openhands multi-instance without --instance", agent: "openhands", file: "../../testdata/trajectories/openhands/ohands_multi_swe_bench_output.jsonl", wantExit: 11, wantMsg: "choose one with --instance ID"},
		{name: "openhands multi-instance with --instance", agent: "openhands", file: "../../testdata/trajectories/openhands/ohands_multi_swe_bench_output.jsonl", args: []string{"--instance", "ponylang__ponyc-4588"}, wantExit: 0},
		{name: "openhands unknown --instance", agent: "openhands", file: "../../testdata/trajectories/openhands/ohands_multi_swe_bench_output.jsonl", args: []string{"--instance", "x"}, wantExit: 10, wantMsg: `no instance "x"`},
		{name: "--instance for another agent", agent: "claude-code", content: claudeBase, args: []string{"--instance", "x"}, wantExit: 2, wantMsg: "--instance selects an instance of a file holding several sessions (an OpenHands output.jsonl, for openhands)"},
		{name: "pi-agent is pi", agent: "pi-agent", content: piBase, wantExit: 0},
		{name: "disallowed tool for claude", agent: "claude-code", content: claudeBase, args: []string{"--agent-disallowed-tool", "WebFetch", "--agent-disallowed-tool", "Task"}, wantExit: 0},
		{name: "disallowed tool for codex", agent: "codex", content: codexBase, args: []string{"--agent-disallowed-tool", "WebFetch"}, wantExit: 2, wantMsg: "disallowed_tools is supported only for claude-code"},
		{name: "disallowed tool bad name", agent: "claude-code", content: claudeBase, args: []string{"--agent-disallowed-tool", "Web Fetch"}, wantExit: 2, wantMsg: `invalid disallowed tool name "Web Fetch"`},
		{name: "disallowed tool twice", agent: "claude-code", content: claudeBase, args: []string{"--agent-disallowed-tool", "Task", "--agent-disallowed-tool", "Task"}, wantExit: 2, wantMsg: `duplicate disallowed tool "Task"`},
		{name: "JSON request", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"claude-code","disallowed_tools":["Task"]},"prepare_only":true,"max_steps":3,"session_id":"k","run_id":"q"`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 0},
		{name: "JSON request pi-agent", agent: "pi", content: piBase, setup: writeRequest(`"agent":{"type":"pi-agent"},"prepare_only":true`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 0},
		{name: "JSON request wrong schema", agent: "claude-code", content: claudeBase, setup: writeRequest(`"schema_version":"sandbox-playback.request/v2","agent":{"type":"claude-code"}`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 2, wantMsg: `request schema_version must be "sandbox-playback.request/v1"`},
		{name: "JSON request unknown agent", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"gemini"}`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 11, wantCat: "unsupported_agent", wantMsg: `unsupported agent "gemini"`},
		{name: "JSON request unknown field", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"claude-code"},"gateway":{}`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 2, wantMsg: `unknown field "gateway"`},
		{name: "JSON request without workspace", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"claude-code"},"workspace":null`),
			raw: []string{"--request", "{dir}/req.json"}, wantExit: 2, wantMsg: "workspace, state_dir and output_dir are required"},
		{name: "JSON request plus a direct flag", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"claude-code"}`),
			raw: []string{"--request", "{dir}/req.json", "--replay-only"}, wantExit: 2, wantMsg: "cannot be combined with direct replay options"},
		{name: "JSON request plus a config", agent: "claude-code", content: claudeBase, setup: writeRequest(`"agent":{"type":"claude-code"}`),
			raw: []string{"--request", "{dir}/req.json", "--config", "{dir}/req.json"}, wantExit: 2, wantMsg: "cannot be combined"},
		{name: "TOML disallowed_tools for codex", agent: "codex", content: codexBase, setup: writeConfig("[replay]\nagent = \"codex\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\ndisallowed_tools = [\"Task\"]\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "disallowed_tools is supported only for claude-code"},
		{name: "TOML instance", agent: "openhands", file: "../../testdata/trajectories/openhands/ohands_multi_swe_bench_output.jsonl", setup: writeConfig("[replay]\nagent = \"openhands\"\ntrajectory = \"{traj}\"\ninstance = \"nope\"\nafter_step = 1\nprepare_only = true\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 10, wantMsg: `no instance "nope"`},
		{name: "TOML agent_runtime with agent_entrypoint", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nagent_runtime = \"rt\"\nagent_entrypoint = \"/bin/true\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "mutually exclusive"},
		{name: "positional argument", agent: "claude-code", content: claudeBase, args: []string{"extra"}, wantExit: 2, wantMsg: "unexpected argument"},
		{name: "bad run id", agent: "claude-code", content: claudeBase, args: []string{"--run-id", "a/b"}, wantExit: 2, wantMsg: "run-id"},
		{name: "whitespace boundary prompt", agent: "claude-code", content: claudeBase, args: []string{"--boundary-user-prompt", "  "}, wantExit: 2, wantMsg: "non-whitespace"},
		{name: "negative max steps", agent: "claude-code", content: claudeBase, args: []string{"--max-steps", "-1"}, wantExit: 2, wantMsg: "max-steps"},
		{name: "unsupported setting is refused, not ignored", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[overlaynet]\nmode = \"off\"\npolicy = \"allowlist\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "needs --overlaynet proxy (or auto)"},
		{name: "disable-thinking accepted", agent: "claude-code", content: claudeBase, args: []string{"--disable-thinking"}, wantExit: 0},
		{name: "session id accepted", agent: "claude-code", content: claudeBase, args: []string{"--session-id", "router-key"}, wantExit: 0},
		{name: "empty session id", agent: "claude-code", content: claudeBase, args: []string{"--session-id", ""}, wantExit: 2, wantMsg: "session_id must be non-empty"},
		{name: "session id with a newline", agent: "claude-code", content: claudeBase, args: []string{"--session-id", "a\nb"}, wantExit: 2, wantMsg: "no NUL, CR or LF"},
		{name: "unsupported overlaynet table", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[overlaynet]\nmode = \"bridge\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: `--overlaynet "bridge": must be auto, off or proxy`},
		{name: "trajectory assets refused", agent: "claude-code", content: claudeBase, args: []string{"--trajectory-assets", "/tmp"}, wantExit: 2, wantMsg: "--trajectory-assets: claude-code trajectories name no files outside the session (only swe-agent's"},
		{name: "TOML trajectory assets refused", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\ntrajectory_assets = \"assets\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "claude-code trajectories name no files outside the session"},
		{name: "executor host accepted", agent: "claude-code", content: claudeBase, args: []string{"--executor", "host"}, wantExit: 0},
		{name: "executor container without a root", agent: "claude-code", content: claudeBase, args: []string{"--executor", "container"}, wantExit: 2, wantMsg: "add --container-rootfs DIR"},
		{name: "container image without the executor", agent: "claude-code", content: claudeBase, args: []string{"--container-image", "{dir}"}, wantExit: 2, wantMsg: "add --executor container"},
		{name: "TOML run executor container without a root", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[run]\nexecutor = \"container\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "add --container-rootfs DIR"},
		{name: "TOML run rootfs without the executor", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[run]\nrootfs = \"/\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "--container-rootfs is for --executor container"},
		{name: "executor vm refused", agent: "claude-code", content: claudeBase, args: []string{"--executor", "vm"}, wantExit: 2, wantMsg: "--executor vm is not built"},
		{name: "executor kvm refused", agent: "claude-code", content: claudeBase, args: []string{"--executor", "kvm"}, wantExit: 2, wantMsg: "--executor kvm is not built"},
		{name: "executor unknown", agent: "claude-code", content: claudeBase, args: []string{"--executor", "docker"}, wantExit: 2, wantMsg: "must be host, container or vm"},
		{name: "policy observe accepted", agent: "claude-code", content: claudeBase, args: []string{"--policy", "observe"}, wantExit: 0},
		{name: "policy enforce accepted", agent: "claude-code", content: claudeBase, args: []string{"--policy", "enforce"}, wantExit: 0},
		{name: "TOML run policy enforce", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[run]\npolicy = \"enforce\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 0},
		{name: "safe accepted", agent: "claude-code", content: claudeBase, args: []string{"--safe"}, wantExit: 0},
		{name: "safe with a contradicting commit", agent: "claude-code", content: claudeBase, args: []string{"--safe", "--overlayfs-path", "{dir}", "--overlayfs-commit", "apply"}, wantExit: 2, wantMsg: "--overlayfs-commit apply contradicts it"},
		{name: "TOML run executor vm refused", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[run]\nexecutor = \"vm\"\npolicy = \"observe\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "--executor vm is not built"},
		{name: "TOML run policy observe", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\n[run]\nexecutor = \"host\"\npolicy = \"observe\"\nsafe = false\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 0},
		{name: "overlaynet mode as a separate word", agent: "claude-code", content: claudeBase, args: []string{"--overlaynet", "auto"}, wantExit: 0},
		{name: "overlaynet allow without allowlist", agent: "claude-code", content: claudeBase, args: []string{"--overlaynet-allow", "pypi.org"}, wantExit: 2, wantMsg: "require --overlaynet-policy allowlist"},
		{name: "overlaynet allow entry that is a URL", agent: "claude-code", content: claudeBase, args: []string{"--overlaynet", "auto", "--overlaynet-policy", "allowlist", "--overlaynet-allow", "https://pypi.org"}, wantExit: 2, wantMsg: "a URL, not a host"},
		{name: "commit without overlay path", agent: "claude-code", content: claudeBase, args: []string{"--overlayfs-commit", "apply"}, wantExit: 2, wantMsg: "overlayfs path"},
		{name: "unknown TOML key", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\nafter_stpe = 2\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: `r.toml:6: unknown key "replay.after_stpe"`},
		{name: "unknown TOML table", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\n[gateway]\nurl = \"x\"\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "unknown key"},
		{name: "TOML syntax error", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay\nagent = 1\n"), raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "r.toml:1"},
		{name: "TOML without replay table", agent: "claude-code", content: claudeBase, setup: writeConfig("[run]\ntimeout_ms = 5\n"), raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "missing [replay]"},
		{name: "TOML conflicting modes", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\ntrajectory = \"{traj}\"\nafter_step = 1\nprepare_only = true\nreplay_only = true\n"),
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "mutually exclusive"},
		{name: "config is a FIFO", agent: "claude-code", content: claudeBase, setup: func(dir, traj string) { unix.Mkfifo(filepath.Join(dir, "r.toml"), 0o600) },
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "not a regular file"},
		{name: "config is /dev/zero", agent: "claude-code", content: claudeBase, raw: []string{"--config", "/dev/zero"}, wantExit: 2, wantMsg: "not a regular file"},
		{name: "config over the size cap", agent: "claude-code", content: claudeBase, setup: func(dir, traj string) {
			os.WriteFile(filepath.Join(dir, "r.toml"), nil, 0o600)
			os.Truncate(filepath.Join(dir, "r.toml"), 4<<30)
		},
			raw: []string{"--config", "{dir}/r.toml"}, wantExit: 2, wantMsg: "over the 1048576-byte limit"},
		{name: "bogus upstream", agent: "claude-code", content: claudeBase, args: []string{"--upstream", "bogus"}, wantExit: 2, wantCat: "configuration_error",
			wantMsg: `unknown model protocol "bogus": use anthropic, openai-responses or openai-chat, or recorded`},
		{name: "config plus direct flags", agent: "claude-code", content: claudeBase, setup: writeConfig("[replay]\nagent = \"claude-code\"\n"), raw: []string{"--config", "{dir}/r.toml", "--after-step", "1"}, wantExit: 2, wantMsg: "cannot be combined"},
		{name: "unsupported tool in prefix", agent: "claude-code", content: strings.Replace(claudeBase, `"name":"Bash","input":{"command":"ls"}`, `"name":"WebFetch","input":{"url":"http://x"}`, 1), wantExit: 11, wantCat: "unsupported_agent", wantMsg: `step 1: tool "WebFetch"`},
		{name: "unsupported tool allowed stale", agent: "claude-code", content: strings.Replace(claudeBase, `"name":"Bash","input":{"command":"ls"}`, `"name":"WebFetch","input":{"url":"http://x"}`, 1), args: []string{"--allow-stale-observations"}, wantExit: 0},
		{name: "codex forked rollout", agent: "codex", content: strings.Replace(codexBase, `"cli_version":"0.41.0"`, `"cli_version":"0.41.0","history_base":{"id":"x"}`, 1), wantExit: 11, wantMsg: "fork"},
		{name: "codex output without call", agent: "codex", content: strings.Replace(codexBase, `"call_id":"c1","output"`, `"call_id":"c9","output"`, 1), wantExit: 10, wantMsg: "c9"},
		{name: "codex line not an object", agent: "codex", content: replaceLine(codexBase, 2, `"just a string"`), wantExit: 10, wantMsg: "line 2"},
		{name: "output dir reused", agent: "claude-code", content: claudeBase, setup: func(dir, traj string) { os.MkdirAll(filepath.Join(dir, "out", "r1"), 0o700) },
			args: []string{"--run-id", "r1"}, wantExit: 30, wantCat: "executor_error", wantMsg: "already exists"},
		{name: "ambiguous state dir", agent: "claude-code", content: claudeBase, setup: func(dir, traj string) {
			os.MkdirAll(filepath.Join(dir, "state", "r1"), 0o700)
			j, err := result.OpenJournal(filepath.Join(dir, "state", "r1"))
			if err != nil {
				panic(err)
			}
			j.Append(result.EventToolStarted, map[string]string{"call_id": "t1"})
			j.Close()
		}, args: []string{"--run-id", "r1"}, wantExit: 31, wantCat: "ambiguous_execution", wantMsg: "t1"},
	}
}

// writeRequest writes req.json: a prepare-only sandbox-playback.request/v1
// for the trajectory, with fields (later keys win) spliced in.
func writeRequest(fields string) func(dir, traj string) {
	return func(dir, traj string) {
		base, _ := json.Marshal(map[string]any{"schema_version": "sandbox-playback.request/v1", "trajectory": traj, "after_step": 1,
			"workspace": dir, "state_dir": filepath.Join(dir, "state"), "output_dir": filepath.Join(dir, "out"), "prepare_only": true})
		var m map[string]json.RawMessage
		json.Unmarshal(base, &m)
		json.Unmarshal([]byte("{"+fields+"}"), &m)
		body, _ := json.Marshal(m)
		os.WriteFile(filepath.Join(dir, "req.json"), body, 0o600)
	}
}

func writeConfig(body string) func(dir, traj string) {
	return func(dir, traj string) {
		body := strings.ReplaceAll(body, "{traj}", traj)
		os.WriteFile(filepath.Join(dir, "r.toml"), []byte(body), 0o600)
	}
}

// v3Keys are the keys every result line carries, success or failure.
var v3Keys = []string{"schema_version", "phase", "quality", "agent_status", "run_id", "agent", "after_step",
	"replayed_tool_calls", "prefix_model_turns", "continued_steps", "state_dir", "output_dir", "artifacts",
	"failure", "retryable", "metadata"}

func TestBadInputs(t *testing.T) {
	cases := badCases()
	if len(cases) < 30 {
		t.Fatalf("the table must hold at least 30 cases, has %d", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			traj := filepath.Join(dir, "traj.jsonl")
			if tc.file != "" {
				data, err := os.ReadFile(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				tc.content = string(data)
			}
			if tc.raw == nil || tc.content != "" || tc.setup != nil {
				if err := os.WriteFile(traj, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := sha256.Sum256([]byte(tc.content))
			if tc.setup != nil {
				tc.setup(dir, traj)
			}
			args := tc.raw
			if args == nil {
				args = append([]string{"--prepare-only", "--agent", tc.agent, "--trajectory", traj, "--after-step", "1",
					"--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out")}, tc.args...)
			}
			for i := range args {
				args[i] = strings.ReplaceAll(strings.ReplaceAll(args[i], "{dir}", dir), "{traj}", traj)
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"replay"}, args...), &stdout, &stderr)
			res := checkResultLine(t, stdout.Bytes())
			if code != tc.wantExit {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantExit, stderr.String())
			}
			failure, _ := res["failure"].(map[string]any)
			if tc.wantExit == 0 {
				if failure != nil {
					t.Errorf("unexpected failure %v", failure)
				}
			} else {
				if failure == nil {
					t.Fatalf("no failure in result: %s", stdout.String())
				}
				if tc.wantCat != "" && failure["category"] != tc.wantCat {
					t.Errorf("category %v, want %s", failure["category"], tc.wantCat)
				}
				if msg, _ := failure["message"].(string); !strings.Contains(msg, tc.wantMsg) {
					t.Errorf("message %q does not contain %q", msg, tc.wantMsg)
				}
			}
			if data, err := os.ReadFile(traj); err == nil && sha256.Sum256(data) != before {
				t.Errorf("input file changed")
			}
		})
	}
}

// checkResultLine asserts stdout is exactly one JSON line with the v3 shape.
func checkResultLine(t *testing.T, out []byte) map[string]any {
	t.Helper()
	if bytes.Count(out, []byte("\n")) != 1 || !bytes.HasSuffix(out, []byte("\n")) {
		t.Fatalf("stdout must be one JSON line, got %q", out)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("stdout is not JSON: %v: %s", err, out)
	}
	for _, k := range v3Keys {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks %q: %s", k, out)
		}
	}
	if res["schema_version"] != "sandbox-playback.result/v3" {
		t.Errorf("schema_version %v", res["schema_version"])
	}
	return res
}
