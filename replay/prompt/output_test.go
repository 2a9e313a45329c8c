package prompt

import (
	"errors"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		problem          string
	}{
		{"one", "Here: <result>{\"ok\":true}</result> bye", `{"ok":true}`, ""},
		{"last complete wins", "<result>1</result> then <result>2</result>", "2", ""},
		{"open after the last complete", "<result>1</result> and <result>2", "1", ""},
		{"trimmed and unfenced", "<result>\n```json\n{\"a\": 1}\n```\n</result>", `{"a": 1}`, ""},
		{"bare fence", "<result>```\n[1]```</result>", "[1]", ""},
		{"inner fence kept", "<result>see ```x``` here</result>", "see ```x``` here", ""},
		{"missing", "no tag at all <resul>x</resul>", "", ProblemMissing},
		{"unclosed", "<result>{\"a\":", "", ProblemUnclosed},
		{"close without open", "x</result>", "", ProblemUnclosed},
		{"empty", "<result> \n </result>", "", ProblemEmpty},
		{"empty fence", "<result>```json\n```</result>", "", ProblemEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Extract(tc.text, "result")
			if tc.problem != "" {
				var oe *OutputError
				if !errors.As(err, &oe) || oe.Problem != tc.problem || oe.Tag != "result" {
					t.Fatalf("error %v, want problem %q", err, tc.problem)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := Extract("<a b>x</a b>", "a b"); err == nil || !strings.Contains(err.Error(), "output tag") {
		t.Errorf("bad tag name: %v", err)
	}
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["verdict", "score"],
  "properties": {
    "verdict": {"enum": ["pass", "fail"]},
    "score": {"type": "integer", "minimum": 0},
    "notes": {"type": "array", "items": {"$ref": "#/$defs/note"}}
  },
  "$defs": {"note": {"type": "string", "maxLength": 5}},
  "additionalProperties": false
}`

func TestValidateJSON(t *testing.T) {
	for _, tc := range []struct {
		name, content, schema string
		problem               string
		detail                []string
	}{
		{name: "valid", content: `{"verdict":"pass","score":3,"notes":["ok"]}`, schema: schema},
		{name: "big integer stays exact", content: `{"verdict":"pass","score":12345678901234567890}`, schema: schema},
		{name: "any JSON without schema", content: `[1, "two"]`},
		{name: "not JSON", content: `{"verdict":`, problem: ProblemJSON, detail: []string{"unexpected EOF"}},
		{name: "two values", content: `{} {}`, problem: ProblemJSON, detail: []string{"more than one JSON value"}},
		{name: "schema violations", content: `{"verdict":"maybe","score":-1,"notes":["too long"],"x":1}`, schema: schema,
			problem: ProblemSchema, detail: []string{"at /verdict:", "at /score:", "at /notes/0:", "'x'"}},
		{name: "missing property", content: `{"verdict":"pass"}`, schema: schema, problem: ProblemSchema, detail: []string{"score"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateJSON([]byte(tc.content), []byte(tc.schema))
			if tc.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var oe *OutputError
			if !errors.As(err, &oe) || oe.Problem != tc.problem {
				t.Fatalf("error %v, want problem %q", err, tc.problem)
			}
			for _, d := range tc.detail {
				if !strings.Contains(oe.Detail, d) {
					t.Errorf("detail %q lacks %q", oe.Detail, d)
				}
			}
		})
	}
}

// A bad schema is refused, and a $ref never reaches the disk or network.
func TestCompileSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":`, "not JSON"},
		{`{"type": 12}`, "not a valid JSON Schema"},
		{`{"$ref": "file:///etc/passwd"}`, "not a valid JSON Schema"},
		{`{"$ref": "https://example.com/s.json"}`, "not a valid JSON Schema"},
	} {
		if _, err := CompileSchema([]byte(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.schema, err, tc.want)
		}
	}
}

func TestRetryMessage(t *testing.T) {
	_, missing := Extract("nothing", "answer")
	_, unclosed := Extract("<answer>{", "answer")
	schemaErr := WithTag(ValidateJSON([]byte(`{"verdict":"pass"}`), []byte(schema)), "answer")
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{missing, []string{"did not contain <answer>…</answer>", "Reply again with the complete result inside <answer>…</answer>"}},
		{unclosed, []string{"<answer>…</answer> was not closed"}},
		{schemaErr, []string{"does not match the required schema", "score"}},
		{WithTag(ValidateJSON([]byte("{"), nil), "answer"), []string{"<answer>…</answer> is not valid JSON"}},
		{errors.New("boom"), []string{"could not be used: boom"}},
	} {
		msg := RetryMessage(tc.err)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("RetryMessage(%v) = %q, lacks %q", tc.err, msg, w)
			}
		}
		if len(msg) > 600 {
			t.Errorf("RetryMessage is %d bytes: keep it short", len(msg))
		}
	}
}
