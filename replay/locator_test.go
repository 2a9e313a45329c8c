package replay

import (
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// native_locator is pVisor's "events:" and a 0-based inclusive range,
// whatever unit the format counts in.
func TestPvisorLocator(t *testing.T) {
	for _, tc := range []struct {
		loc  trajectory.Locator
		want string
	}{
		{trajectory.Locator{Unit: "line", First: 11, Last: 18}, "events:10-17"},
		{trajectory.Locator{Unit: "line", First: 1, Last: 1}, "events:0-0"},
		{trajectory.Locator{Unit: "event", First: 3, Last: 6}, "events:3-6"},
		{trajectory.Locator{Unit: "message", First: 0, Last: 2}, "events:0-2"},
		{trajectory.Locator{Unit: "entry", First: 4, Last: 4}, "events:4-4"},
	} {
		if got := pvisorLocator(tc.loc); got != tc.want {
			t.Errorf("pvisorLocator(%v) = %q, want %q", tc.loc, got, tc.want)
		}
	}
}
