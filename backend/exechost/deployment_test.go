package exechost

import (
	"bytes"
	"strings"
	"testing"
)

// A durable Host without the deployment's secret could key its holders
// with nothing, and would then tell no deployment's holders apart: New
// refuses it and says what is missing.
func TestDurableNeedsTheHolderSecret(t *testing.T) {
	for _, secret := range [][]byte{nil, bytes.Repeat([]byte{1}, 31)} {
		_, err := New(nil, Config{Durable: Durable{Enabled: true, HolderSecret: secret}})
		if err == nil || !strings.Contains(err.Error(), "holder secret") {
			t.Fatalf("New with a %d-byte secret = %v, want a refusal naming the holder secret", len(secret), err)
		}
	}
}

// Each instance's holders get a key of their own, so root in one instance,
// who can read its holder's key, learns nothing of another's; and every
// gateway of the deployment derives the same.
func TestInstanceKeysDiffer(t *testing.T) {
	a, b := []byte("deployment A's secret, 32 bytes!"), []byte("deployment B's secret, 32 bytes!")
	k := InstanceKey(a, "c1")
	if len(k) != 32 || !bytes.Equal(k, InstanceKey(a, "c1")) {
		t.Fatalf("InstanceKey(a, c1) = %x, want 32 bytes, the same every time", k)
	}
	for _, other := range [][]byte{InstanceKey(a, "c2"), InstanceKey(b, "c1"), InstanceKey(a, "c1\x00")} {
		if bytes.Equal(k, other) {
			t.Fatalf("two instances or deployments share the key %x", k)
		}
	}
}
