package envelope

import (
	"encoding/json"
	"testing"
)

func TestNonce(t *testing.T) {
	a, b := NewNonce(), NewNonce()
	if a == b || !ValidNonce(a) || !ValidNonce(b) {
		t.Errorf("nonces %q %q", a, b)
	}
	if ValidNonce("short") {
		t.Error("a malformed nonce is valid")
	}
}

func rawStrings(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}
