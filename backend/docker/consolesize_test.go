package docker

import "testing"

// An engine that takes ConsoleSize at exec creation starts the shell at
// the client's size without a resize round trip; older ones (and an
// unknown version) keep the resize after the attach.
func TestConsoleSizeAtCreate(t *testing.T) {
	for v, want := range map[string]bool{"1.41": false, "1.40": false, "": false, "1.42": true, "1.47": true, "1.51": true} {
		if got := consoleSizeAtCreate(v); got != want {
			t.Errorf("API %q: %v, want %v", v, got, want)
		}
	}
}
