package opencode

import (
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

func TestExportRewrite(t *testing.T) {
	for _, v := range []string{"opencode@1.18.20", "opencode@1.18.33"} {
		t.Run(v, func(t *testing.T) {
			got := sessiontest.Rewrite(t, Exports(), filepath.Join("../../testdata/e2e/sessions", v, "export.json"))
			formattest.Golden(t, filepath.Join("testdata", "golden", "session-rewrite_"+v+".txt"), got)
		})
	}
}
