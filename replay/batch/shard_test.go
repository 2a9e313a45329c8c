package batch

import (
	"strings"
	"testing"
)

// Issue 24 #14: a shard is plain decimal digits, as the other integer
// flags; "+1/3" and "00/1" were read as shards 1 and 0.
func TestParseShardRefusesSignsAndLeadingZeros(t *testing.T) {
	for _, v := range []string{"+1/3", "00/1", "1/+3", "01/3", " 1/3", "1/3 ", "0x1/3", "1_0/20", "-0/1", "1/03"} {
		if s, err := ParseShard(v); err == nil || !strings.Contains(err.Error(), "plain decimal digits") {
			t.Errorf("ParseShard(%q) = %v, %v: want a refusal", v, s, err)
		}
	}
	for v, want := range map[string]Shard{"0/1": {0, 1}, "2/4": {2, 4}, "10/11": {10, 11}} {
		if s, err := ParseShard(v); err != nil || s != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", v, s, err, want)
		}
	}
	if _, err := ParseShard("3/3"); err == nil || !strings.Contains(err.Error(), "0 <= I < N") {
		t.Errorf("3/3: %v", err)
	}
}
