package codex

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/envelope"
)

// BenchmarkCodexCheck measures a whole Check of a resumed Codex request against
// a baseline taken in the same loop: json.Valid over the same body, the least
// any proxy that reads the request pays. The ratio is the envelope's cost in
// units of one validating pass.
func BenchmarkCodexCheck(b *testing.B) {
	fx := load(b)
	big := fx
	// A session with large tool outputs: every output carries 256 KiB more.
	pad := strings.Repeat("x", 256<<10)
	body := strings.ReplaceAll(string(fx.body), `Output:\n`, `Output:\n`+pad)
	items := make([]json.RawMessage, len(fx.proj.Items))
	for i, it := range fx.proj.Items {
		items[i] = json.RawMessage(strings.ReplaceAll(string(it), `Output:\n`, `Output:\n`+pad))
	}
	proj := *fx.proj
	proj.Items = items
	big.proj = &proj
	big.body = []byte(body)
	for _, bc := range []struct {
		name string
		fx   fixture
	}{{"recorded-41KB", fx}, {"large-outputs-1MB", big}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newCodex(b, bc.fx, envelope.Options{})
			req := request(string(bc.fx.body))
			var check, base time.Duration
			b.SetBytes(int64(len(bc.fx.body)))
			for b.Loop() {
				t0 := time.Now()
				if !json.Valid(bc.fx.body) {
					b.Fatal("invalid body")
				}
				t1 := time.Now()
				if _, err := c.Check(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				base, check = base+t1.Sub(t0), check+time.Since(t1)
			}
			b.ReportMetric(float64(check)/float64(base), "x_json_valid")
		})
	}
}
