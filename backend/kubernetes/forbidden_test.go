package kubernetes

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/streaming/pkg/httpstream"
)

// forbidden: an API status decides by its reason and code; only an error
// without one (SPDY's upgrade keeps the message) is read as text.
func TestForbidden(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	refusal := apierrors.NewForbidden(pods, "web1", errors.New("RBAC: no"))
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"status", refusal, true},
		{"wrapped status", fmt.Errorf("exec: %w", refusal), true},
		{"upgrade failure with a status", &httpstream.UpgradeFailureError{Cause: refusal}, true},
		{"SPDY's text", errors.New(`unable to upgrade connection: pods "web1" is forbidden: User "x" cannot create resource "pods/exec"`), true},
		{"WebSocket's text", &httpstream.UpgradeFailureError{Cause: errors.New("websocket: bad handshake (403 Forbidden)")}, true},
		// A status that says something else is not read as text, even
		// when its message has the words.
		{"not found, forbidden in the name", apierrors.NewNotFound(pods, "forbidden-403"), false},
		{"upgrade failure with another status", &httpstream.UpgradeFailureError{Cause: apierrors.NewNotFound(pods, "403")}, false},
		{"other", errors.New("connection refused"), false},
		{"nil", nil, false},
	} {
		if got := forbidden(tt.err); got != tt.want {
			t.Errorf("%s: forbidden(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
