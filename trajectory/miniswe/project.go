package miniswe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// Projection is the message list mini sends the model for a trajectory's
// messages, in the Chat Completions shape it reaches the wire: 1.x sends
// each message's role and content only; 2.x's LitellmModel sends each
// message without its "extra", and the OpenAI client leaves out keys whose
// value is null (function_call, provider_specific_fields).
func Projection(r io.Reader, format string) ([]json.RawMessage, error) {
	d, err := jsondoc.OpenRecords(r, records)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for i := 0; d.More(); i++ {
		raw, _, err := d.Raw("messages")
		if err != nil {
			return nil, err
		}
		ms, err := members(raw)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		var b bytes.Buffer
		b.WriteByte('{')
		n := 0
		for _, m := range ms {
			keep := m.key != "extra" && gjson.ParseBytes(m.raw).Type != gjson.Null
			if format == FormatV1 {
				keep = m.key == "role" || m.key == "content"
			}
			if !keep {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			k, _ := json.Marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			if err := json.Compact(&b, m.raw); err != nil {
				return nil, err
			}
		}
		b.WriteByte('}')
		out = append(out, json.RawMessage(b.Bytes()))
	}
	return out, nil
}
