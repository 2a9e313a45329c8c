package claude

import (
	"strings"
	"testing"
)

func TestHostOSVersion(t *testing.T) {
	if v := hostOSVersion(); !strings.HasPrefix(v, "Linux ") || len(v) <= len("Linux ") {
		t.Errorf("hostOSVersion = %q", v)
	}
}
