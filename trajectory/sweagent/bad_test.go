package sweagent

import (
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
)

const (
	entry1 = `{"action":"ls","observation":"a.txt","thought":"look"}`
	asst1  = `{"role":"assistant","content":"look","tool_calls":[{"id":"c1","function":{"name":"bash"}}]}`
	tool1  = `{"role":"tool","content":"a.txt","tool_call_ids":["c1"]}`
)

func doc(entries, history string) string {
	return "{\n\"trajectory\": [\n" + entries + "\n],\n\"history\": [\n" + history + "\n],\n\"info\": {\"swe_agent_version\": \"1.1.0\"}\n}"
}

var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "the file is empty")),
	formattest.Refuse("not json", "swe", formattest.Malformed(1, "invalid JSON")),
	formattest.Refuse("an array", "[]", formattest.Malformed(1, "expected a SWE-agent trajectory (a JSON object), found an array")),
	formattest.Refuse("no trajectory", "{\"history\": []}", formattest.Malformed(1, `the file has no "trajectory"`)),
	formattest.Refuse("trajectory not array", "{\n\"trajectory\": {}\n}", formattest.Malformed(2, `trajectory: expected "["`)),
	formattest.Refuse("entry not object", doc(entry1+",\n7", asst1), formattest.Malformed(4, "trajectory entry 1 is a number, not an object")),
	formattest.Refuse("action not string", doc(`{"action":["ls"],"observation":""}`, asst1), formattest.Malformed(3,
		`trajectory entry 0: "action" is an array, not a string`)),
	formattest.Refuse("no action", doc(`{"observation":""}`, asst1), formattest.Malformed(3, `trajectory entry 0 has no "action"`)),
	formattest.Refuse("observation not string", doc(`{"action":"ls","observation":{}}`, asst1), formattest.Malformed(3,
		`trajectory entry 0: "observation" is an object, not a string`)),
	formattest.Refuse("message not object", doc(entry1, `"hi"`), formattest.Malformed(6, "history message 0 is a string, not an object")),
	formattest.Refuse("no role", doc(entry1, `{"content":"x"}`), formattest.Malformed(6, `history message 0 has no "role" string`)),
	formattest.Refuse("tool_calls not array", doc(entry1, `{"role":"assistant","tool_calls":{}}`), formattest.Malformed(6,
		"history message 0: tool_calls is an object, not an array")),
	formattest.Refuse("tool call without id", doc(entry1, `{"role":"assistant","tool_calls":[{"function":{"name":"bash"}}]}`), formattest.Malformed(6,
		"history message 0: tool call 0 has no id")),
	formattest.Refuse("duplicate call id", doc(entry1+",\n"+entry1, asst1+",\n"+tool1+",\n"+asst1), formattest.Malformed(0,
		`trajectory entries 0 and 1 have the same tool call id "c1"`)),
	formattest.Refuse("two trajectories", "{\"trajectory\":[],\n\"trajectory\":[]}", formattest.Malformed(1, `the file has two "trajectory" keys`)),
	formattest.Refuse("info not object", "{\"trajectory\":[],\n\"info\":3}", formattest.Malformed(2, "info is a number, not an object")),
	formattest.Refuse("version 2", "{\"trajectory\":[],\n\"info\":{\"swe_agent_version\":\"2.0.0\"}}", formattest.Unsupported(2,
		"SWE-agent 2.0.0 is not supported")),
	formattest.Refuse("truncated", doc(entry1, asst1)[:40], formattest.Malformed(3, "the JSON document ends early")),
	formattest.Refuse("trailing data", doc(entry1, asst1)+"\n{}", formattest.Malformed(10, "unexpected data after the trajectory")),
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode: no panic, and any successful decode satisfies the invariants
// and writes a prefix of each of its steps that decodes to that many steps.
func FuzzDecode(f *testing.F) { corpus.Fuzz(f, 64<<10, nil) }
