package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// OutputError is structured output that cannot be used; Problem is one of
// the Problem* values, Detail says more.
type OutputError struct {
	Tag     string
	Problem string
	Detail  string
}

// What can be wrong with structured output.
const (
	ProblemMissing  = "missing"
	ProblemUnclosed = "unclosed"
	ProblemEmpty    = "empty"
	ProblemJSON     = "not JSON"
	ProblemSchema   = "does not match the schema"
)

func (e *OutputError) Error() string {
	s := "structured output: " + e.Problem
	if e.Tag != "" {
		s = fmt.Sprintf("structured output <%s>: %s", e.Tag, e.Problem)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

var tagPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`) })

// CheckTag validates an --output-tag name.
func CheckTag(tag string) error {
	if !tagPattern().MatchString(tag) {
		return fmt.Errorf("output tag %q: use a name of letters, digits, '_', '.' and '-', starting with a letter (e.g. result)", tag)
	}
	return nil
}

// RequireTag checks that a prompt asks for the structured output: the
// caller writes the instruction, and a prompt that never names <tag> would
// send the agent round the retries for nothing.
func RequireTag(prompt, tag string) error {
	if err := CheckTag(tag); err != nil {
		return err
	}
	if !strings.Contains(prompt, "<"+tag+">") {
		return fmt.Errorf("the prompt never mentions <%s>: tell the agent to answer inside <%s>…</%s>", tag, tag, tag)
	}
	return nil
}

// Extract returns the content of the last complete <tag>…</tag> in text,
// trimmed, without a ```json fence around it.
func Extract(text, tag string) (string, error) {
	if err := CheckTag(tag); err != nil {
		return "", err
	}
	open, close := "<"+tag+">", "</"+tag+">"
	end := strings.LastIndex(text, close)
	if end < 0 {
		if strings.Contains(text, open) {
			return "", &OutputError{Tag: tag, Problem: ProblemUnclosed, Detail: fmt.Sprintf("%s was opened but never closed with %s", open, close)}
		}
		return "", &OutputError{Tag: tag, Problem: ProblemMissing, Detail: fmt.Sprintf("the output holds no %s…%s", open, close)}
	}
	start := strings.LastIndex(text[:end], open)
	if start < 0 {
		return "", &OutputError{Tag: tag, Problem: ProblemUnclosed, Detail: fmt.Sprintf("%s appears without an opening %s", close, open)}
	}
	content := strings.TrimSpace(unfence(strings.TrimSpace(text[start+len(open) : end])))
	if content == "" {
		return "", &OutputError{Tag: tag, Problem: ProblemEmpty, Detail: fmt.Sprintf("%s%s holds nothing", open, close)}
	}
	return content, nil
}

// fence is a Markdown code fence around the whole content, as models
// like to write JSON.
var fence = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)^```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```$") })

func unfence(s string) string {
	if m := fence().FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// maxSchemaErrors bounds how many violations a message lists.
const maxSchemaErrors = 5

// ValidateJSON checks that content is one JSON value and, when schema is
// not empty, that it matches that JSON Schema (drafts 4 to 2020-12; $ref
// only within the schema: nothing is fetched or read from disk).
func ValidateJSON(content, schema []byte) error {
	inst, err := decodeOne(content)
	if err != nil {
		return &OutputError{Tag: "", Problem: ProblemJSON, Detail: err.Error()}
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	sch, err := CompileSchema(schema)
	if err != nil {
		return err
	}
	return validate(sch, inst)
}

// Schema is a compiled output schema.
type Schema struct{ root *node }

// CompileSchema compiles a JSON Schema once, so a bad --output-schema is
// refused before any agent runs.
func CompileSchema(schema []byte) (*Schema, error) {
	doc, err := decodeSchemaJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("output schema: not JSON: %v", err)
	}
	root, err := compileSchemaDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("output schema is not a valid JSON Schema: %v", err)
	}
	return &Schema{root: root}, nil
}

// Validate checks content against the schema.
func (s *Schema) Validate(content []byte) error {
	inst, err := decodeOne(content)
	if err != nil {
		return &OutputError{Problem: ProblemJSON, Detail: err.Error()}
	}
	return validate(s, inst)
}

func validate(s *Schema, inst any) error {
	v := &validator{active: map[activeKey]bool{}}
	if v.check(s.root, inst, "", &evaluated{}) {
		return nil
	}
	msgs := make([]string, 0, len(v.errs))
	for _, e := range v.errs {
		at := e.at
		if at == "" {
			at = "/"
		}
		msgs = append(msgs, fmt.Sprintf("at %s: %s", at, e.msg))
	}
	if len(msgs) == 0 {
		msgs = []string{"at /: does not validate"}
	}
	if len(msgs) > maxSchemaErrors {
		msgs = append(msgs[:maxSchemaErrors], fmt.Sprintf("and %d more", len(msgs)-maxSchemaErrors))
	}
	return &OutputError{Problem: ProblemSchema, Detail: strings.Join(msgs, "; ")}
}

// decodeOne parses exactly one JSON value, numbers kept exact.
func decodeOne(content []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// RetryMessage is what is sent back to an agent whose structured output
// failed, when it may try again (--max-retries): what was wrong and what
// to send instead, in a few lines.
func RetryMessage(err error) string {
	var oe *OutputError
	if !errors.As(err, &oe) {
		return fmt.Sprintf("Your last reply could not be used: %v. Please answer again.", err)
	}
	tag := "the result tag"
	if oe.Tag != "" {
		tag = fmt.Sprintf("<%s>…</%s>", oe.Tag, oe.Tag)
	}
	var what string
	switch oe.Problem {
	case ProblemMissing:
		what = fmt.Sprintf("it did not contain %s", tag)
	case ProblemUnclosed:
		what = fmt.Sprintf("%s was not closed", tag)
	case ProblemEmpty:
		what = fmt.Sprintf("%s was empty", tag)
	case ProblemJSON:
		what = fmt.Sprintf("the content of %s is not valid JSON (%s)", tag, oe.Detail)
	case ProblemSchema:
		what = fmt.Sprintf("the content of %s does not match the required schema (%s)", tag, oe.Detail)
	default:
		what = oe.Error()
	}
	return fmt.Sprintf("Your last reply could not be used: %s. Reply again with the complete result inside %s, and nothing else inside the tags.", what, tag)
}

// WithTag fills in the tag of an OutputError from ValidateJSON, which does
// not know it, for messages and RetryMessage.
func WithTag(err error, tag string) error {
	var oe *OutputError
	if errors.As(err, &oe) && oe.Tag == "" {
		c := *oe
		c.Tag = tag
		return &c
	}
	return err
}
