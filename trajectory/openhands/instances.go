package openhands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// MultiInstanceMsg starts the refusal of an output.jsonl with several
// instances when none was chosen; callers that can list them look for it.
const MultiInstanceMsg = "this output.jsonl holds more than one instance"

// Instance is one line of an evaluation output.jsonl (Events: the length
// of its history).
type Instance = trajectory.Instance

// Instances and IsMultiple make the format a trajectory.MultiSession.
func (format) Instances(r io.Reader) ([]Instance, error) { return Instances(r) }

func (format) IsMultiple(err error) bool {
	return err != nil && strings.Contains(err.Error(), MultiInstanceMsg)
}

// Instances lists the instances of an output.jsonl, one per non-blank line.
func Instances(r io.Reader) ([]Instance, error) {
	var out []Instance
	err := eachLine(r, func(n int, _ int64, line []byte) (bool, error) {
		v := gjson.ParseBytes(line)
		if !v.IsObject() {
			return false, trajectory.Errorf(n, "not a JSON object; an output.jsonl holds one instance object per line")
		}
		out = append(out, Instance{ID: v.Get("instance_id").String(), Line: n, Events: int(v.Get("history.#").Int())})
		return true, nil
	})
	return out, err
}

// selectInstance finds the line whose instance_id is id.
func selectInstance(r io.Reader, id string) (line []byte, n int, off int64, err error) {
	var ids []string
	err = eachLine(r, func(ln int, o int64, b []byte) (bool, error) {
		got := gjson.GetBytes(b, "instance_id")
		if got.Type == gjson.String && got.Str == id {
			line, n, off = bytes.Clone(b), ln, o
			return false, nil
		}
		if len(ids) < 5 && got.Str != "" {
			ids = append(ids, got.Str)
		}
		return true, nil
	})
	if err != nil || line != nil {
		return line, n, off, err
	}
	return nil, 0, 0, &trajectory.Error{Kind: trajectory.Malformed,
		Msg:  fmt.Sprintf("no instance %q in this output.jsonl (it has %s)", id, strings.Join(ids, ", ")),
		Hint: "run 'pvisor inspect FILE' to list its instances"}
}

// eachLine calls fn with each non-blank line, its 1-based number and byte
// offset, until fn returns false.
func eachLine(r io.Reader, fn func(n int, off int64, line []byte) (bool, error)) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		start := off
		off += int64(len(line))
		if t := bytes.TrimSpace(line); len(t) > 0 {
			lead := int64(len(line) - len(bytes.TrimLeft(line, " \t\r\n")))
			more, ferr := fn(n, start+lead, t)
			if ferr != nil || !more {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// decodeInstance decodes the chosen line of a multi-instance output.jsonl.
func decodeInstance(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	line, n, off, err := selectInstance(r, opts.Instance)
	if err != nil {
		return nil, err
	}
	if line[0] != '{' {
		return nil, trajectory.Errorf(n, "--instance applies to an evaluation output.jsonl (one instance object per line)")
	}
	one := opts
	one.Instance = ""
	t, err := format{}.Decode(bytes.NewReader(line), one)
	if err != nil {
		var te *trajectory.Error
		if errors.As(err, &te) && te.Line > 0 {
			te.Line += n - 1
		}
		return nil, err
	}
	t.Offset = off
	return t, nil
}
