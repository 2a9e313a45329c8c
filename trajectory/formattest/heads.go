package formattest

import (
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// head is the start of a file of one agent's format ("" for none), small
// enough to write by hand: the shapes detection is most likely to confuse.
// The test of this package checks each against every format.
type head struct {
	agent, name, text string
}

var heads = []head{
	{trajectory.ClaudeCode, "claude", `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2025-10-01T00:00:00.000Z"}`},
	// A later entry of a session whose first lines were cut off.
	{trajectory.ClaudeCode, "claude-later-entry", `{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u2","parentUuid":"u1","sessionId":"0a1b"}`},
	{trajectory.Codex, "codex", `{"timestamp":"2025-09-25T01:22:20.083Z","type":"session_meta","payload":{"id":"0199","cwd":"/x"}}`},
	{trajectory.Codex, "codex-exec", `{"type":"thread.started","thread_id":"019a2d7a-6455-7170-a661-c6d8b94c630a"}` + "\n" + `{"type":"turn.started"}` + "\n"},
	{trajectory.Codex, "codex-exec-error", `{"type":"thread.started","thread_id":"0199"}` + "\n" + `{"type":"error","message":"boom"}`},
	{trajectory.Pi, "pi", `{"type":"session","version":3,"id":"0199","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/x"}`},
	{trajectory.Pi, "pi-events", `{"type":"agent_start"}` + "\n" + `{"type":"turn_start"}` + "\n"},
	{trajectory.Pi, "pi-message-end", `{"type":"message_end","message":{"role":"assistant","content":[]}}`},
	{trajectory.OpenCode, "opencode", `{"type":"step_start","timestamp":1767445000100,"sessionID":"ses_1","part":{"type":"step-start"}}`},
	{trajectory.OpenCode, "oc-tool-use", `{"type":"tool_use","timestamp":1,"sessionID":"ses_4947","part":{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed"}}}`},
	{trajectory.OpenCode, "oc-export", `{"info":{"id":"ses_1","title":"x"},"messages":[{"info":{"role":"user"},"parts":[]}]}`},
	{trajectory.OpenCode, "oc-export-pretty", "{\n  \"info\": {\n    \"id\": \"ses_f96a\",\n    \"version\": \"1.18.27\"\n  },\n  \"messages\": []\n}"},
	// Claimed so that Decode can say a capture of the server's /event bus
	// is not a session.
	{trajectory.OpenCode, "oc-event-bus", `{"timestamp":1772788853247,"threadId":"1","event":{"type":"session.status","properties":{"sessionID":"ses_1","sessionId":"ses_1"}}}` + "\n"},
	{trajectory.OpenCode, "oc-event-bus-message", `{"timestamp":1772641510628,"threadId":"1478","projectDirectory":"/p","event":{"type":"message.updated","properties":{"info":{"role":"user"}}}}`},
	{trajectory.OpenHands, "openhands", "[\n  {\n    \"id\": 0,\n    \"source\": \"user\",\n    \"action\": \"message\",\n    \"args\": {}\n  }"},
	{trajectory.OpenHands, "oh-one-line", `[{"id":0,"source":"user","action":"message"}]`},
	{trajectory.OpenHands, "oh-eval", `{"instance_id":"x","instruction":"y","metadata":{"agent_class":"CodeActAgent"},"history":[{"id":0,"source":"user","action":"message"}]}`},
	// Claimed so that Decode can say V1 is not supported yet.
	{trajectory.OpenHands, "oh-v1", `{"id":"03d5","timestamp":"t","source":"environment","key":"execution_status","value":"running","kind":"ConversationStateUpdateEvent"}`},
	// One event file of a session's events/ folder, claimed so that Decode
	// can say it is not a trajectory.
	{trajectory.OpenHands, "oh-single-event", "{\n  \"id\": 4,\n  \"timestamp\": \"2025-01-20T20:29:13\",\n  \"source\": \"agent\",\n  \"action\": \"run\",\n  \"args\": {}\n}"},
	// A first event longer than the head (a system prompt).
	{trajectory.OpenHands, "oh-cut", `[{"id":0,"timestamp":"2025-05-01T00:00:00","source":"agent","message":"You are OpenHands agent, a helpful AI`},
	{trajectory.MiniSWE, "mini-v1", "{\n  \"info\": {\n    \"exit_status\": \"Submitted\",\n    \"mini_version\": \"1.15.0\"},\n  \"messages\": [\n    {\"role\": \"system\", \"content\": \"x\"}"},
	{trajectory.MiniSWE, "mini-format-first", "{\n  \"trajectory_format\": \"mini-swe-agent-1\",\n  \"messages\": []\n}\n"},
	{trajectory.MiniSWE, "mini-bare", "[\n  {\n    \"role\": \"system\",\n    \"content\": \"You are a helpful assistant\"\n  }"},
	// mini writes info first: in a large file only its keys are in the head.
	{trajectory.MiniSWE, "mini-class-path", "{\n  \"info\": {\n    \"model_stats\": {\"instance_cost\": 0.0, \"api_calls\": 3},\n    \"agent_type\": \"minisweagent.agents.default.DefaultAgent\""},
	{"", "mini-cut-info", "{\n  \"info\": {\n    \"model_stats\": {\"instance_cost\": 0.0, \"api_calls\": 3},\n    \"config\": {\"agent\": {\"system_template\": \"You are a"},
	// SWE-agent's .traj has both an OpenHands-like trajectory and a
	// mini-like history.
	{trajectory.SWEAgent, "swe-agent", `{"trajectory":[{"action":"ls","observation":"x"}],"history":[{"role":"system","content":"x"}],"info":{}}`},
	{trajectory.SWEAgent, "swe-agent-info", `{"trajectory":[{"action":"ls","observation":"x"}],"history":[{"role":"system","content":"x"}],"info":{"exit_status":"submitted","submission":"x"}}`},
	// SWE-agent ≤ 1.0 writes environment first.
	{trajectory.SWEAgent, "swe-agent-env-first", "{\n  \"environment\": \"main\",\n  \"trajectory\": [\n    {\n      \"action\": \"find_file x.py\",\n      \"observation\": \"Found"},
	// A demonstration holds only history: not a run.
	{"", "swe-agent-demo", `{"history":[{"role":"system","content":"x","agent":"main","message_type":"system_prompt"}]}`},
	{"", "empty", ``},
	{"", "plain-text", "hello\nworld\n"},
	{"", "array-nums", `[1,2,3]`},
	{"", "role-unknown", `[{"role":"developer","content":"x"}]`},
}

// checkHeads requires f to claim the heads of its own format and no others.
func checkHeads(t testing.TB, f trajectory.Format) {
	t.Helper()
	for _, h := range heads {
		if got, want := f.Detect([]byte(h.text)), h.agent == f.Agent(); got != want {
			t.Errorf("Detect(%s head) = %v, want %v", h.name, got, want)
		}
	}
}
