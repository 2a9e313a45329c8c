package openhands

import (
	"bytes"
	"os"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

const (
	userMsg = `{"id":0,"source":"user","action":"message","args":{"content":"task"}}`
	runAct  = `{"id":1,"source":"agent","action":"run","args":{"command":"ls"}}`
)

var badInputs = []struct {
	name string
	src  string
	kind trajectory.Kind
	line int
	want string
}{
	{"empty", "", trajectory.Malformed, 0, "the file is empty"},
	{"blank", "\n \n", trajectory.Malformed, 0, "the file is empty"},
	{"not json", "hello", trajectory.Malformed, 1, "invalid JSON"},
	{"a string", `"x"`, trajectory.Malformed, 1, "expected a JSON array of OpenHands events, found a string"},
	{"empty array", "[\n]", trajectory.Malformed, 2, "the event array has no events"},
	{"element not object", "[\n" + userMsg + ",\n42]", trajectory.Malformed, 3, "event 1 is a number, not an object"},
	{"neither action nor observation", "[\n" + userMsg + ",\n{\"id\":1,\"source\":\"agent\"}]", trajectory.Malformed, 3,
		`event 1 has neither "action" nor "observation"`},
	{"both", "[\n" + userMsg + ",\n{\"id\":1,\"action\":\"run\",\"observation\":\"run\",\"args\":{}}]", trajectory.Malformed, 3,
		`event 1 has both "action" and "observation"`},
	{"action not string", "[\n" + userMsg + ",\n{\"id\":1,\"action\":7,\"args\":{}}]", trajectory.Malformed, 3,
		`event 1: "action" is a number, not a string`},
	{"args not object", "[\n" + userMsg + ",\n{\"id\":1,\"source\":\"agent\",\"action\":\"run\",\"args\":\"ls\"}]", trajectory.Malformed, 3,
		`event 1: "args" is a string, not an object`},
	{"id not integer", "[\n" + userMsg + ",\n{\"id\":1.5,\"source\":\"agent\",\"action\":\"run\",\"args\":{}}]", trajectory.Malformed, 3,
		"event 1: id 1.5 is not an integer"},
	{"cause not id", "[\n" + userMsg + ",\n" + runAct + ",\n{\"id\":2,\"observation\":\"run\",\"cause\":\"1\",\"content\":\"\"}]",
		trajectory.Malformed, 4, `event 2: cause "1" is not an event id`},
	{"duplicate id", "[\n" + userMsg + ",\n" + runAct + ",\n" + runAct + "]", trajectory.Malformed, 4, "event 2: duplicate id 1"},
	{"string ids", "[\n{\"id\":\"a\",\"source\":\"user\",\"action\":\"message\",\"args\":{}}]", trajectory.Malformed, 2,
		"id is a string; V0 event ids are integers"},
	{"truncated", "[\n" + userMsg + ",\n" + runAct[:30], trajectory.Malformed, 3, "the JSON document ends early"},
	{"syntax error inside an event", "[\n  {\n    \"id\": 0,\n    \"source\": user\n  }\n]", trajectory.Malformed, 4, "invalid character 'u'"},
	{"missing comma", "[\n" + userMsg + "\n" + runAct + "]", trajectory.Malformed, 3, "invalid JSON"},
	{"trailing data", "[\n" + userMsg + "\n]\n[]", trajectory.Malformed, 4, "unexpected data after the event array"},
	{"bad utf-8", "[\n{\"id\":0,\"source\":\"user\",\"action\":\"message\",\"args\":{\"content\":\"\xff\"}}]", trajectory.Malformed, 2,
		"not valid UTF-8"},
	{"v1 events in array", `[{"id":"3f2a","timestamp":"t","source":"agent","kind":"ActionEvent"}]`, trajectory.Unsupported, 1, v1Msg},
	{"v1 event line", `{"id":"3f2a","timestamp":"t","source":"agent","kind":"ActionEvent","tool_name":"terminal"}` + "\n",
		trajectory.Unsupported, 1, v1Msg},
	{"single event file", "{\n  \"id\": 4,\n  \"source\": \"agent\",\n  \"action\": \"run\",\n  \"args\": {}\n}", trajectory.Unsupported, 1,
		"this is a single OpenHands event"},
	{"object without history", `{"instance_id":"x","instruction":"y"}`, trajectory.Malformed, 1, `a JSON object without "history"`},
	{"history not array", `{"instance_id":"x","history":{"id":0}}`, trajectory.Malformed, 1, `history: expected "["`},
	{"two instances", `{"instance_id":"a","history":[` + userMsg + `]}` + "\n" + `{"instance_id":"b","history":[]}` + "\n",
		trajectory.Unsupported, 2, "more than one instance"},
	{"instance then garbage", `{"instance_id":"a","history":[` + userMsg + `]}` + "\nx", trajectory.Malformed, 2, "invalid JSON"},
	{"history empty", `{"instance_id":"a","history":[]}`, trajectory.Malformed, 1, "history has no events"},
}

func TestBadInputs(t *testing.T) {
	for _, tt := range badInputs {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := decodeBytes(t, []byte(tt.src))
			if err == nil {
				t.Fatalf("decoded %q into %d actions", tt.src, len(tr.Actions))
			}
			checkErr(t, err, tt.kind, tt.line, tt.want)
		})
	}
}

// FuzzDecode: no panic, and any successful decode satisfies the invariants
// and writes a prefix for each of its steps (or refuses with a
// *trajectory.Error).
func FuzzDecode(f *testing.F) {
	for _, tt := range badInputs {
		f.Add([]byte(tt.src))
	}
	for _, path := range corpusFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			if _, ok := err.(*trajectory.Error); !ok {
				t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
			}
			return
		}
		if err := invariants(tr); err != nil {
			t.Fatal(err)
		}
		for i := range tr.Steps() {
			var buf bytes.Buffer
			err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, i+1)
			if err != nil {
				if _, ok := err.(*trajectory.Error); !ok {
					t.Fatalf("WritePrefix error is %T: %v", err, err)
				}
				continue
			}
			pt, err := New().Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatalf("prefix of step %d does not decode: %v", i+1, err)
			}
			if len(pt.Steps()) != i+1 {
				t.Fatalf("prefix of step %d has %d steps", i+1, len(pt.Steps()))
			}
		}
	})
}
