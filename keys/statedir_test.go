package keys

import (
	"os"
	"testing"
)

func TestDefaultStateDir(t *testing.T) {
	tests := []struct {
		name, xdg, home, want string
		unsetHome             bool
	}{
		{name: "XDG_STATE_HOME", xdg: "/xdg/state", home: "/home/u", want: "/xdg/state/termgate"},
		{name: "relative XDG_STATE_HOME is ignored", xdg: "rel/state", home: "/home/u", want: "/home/u/.local/state/termgate"},
		{name: "home", home: "/home/u", want: "/home/u/.local/state/termgate"},
		{name: "no home", unsetHome: true, want: "/var/lib/termgate"},
		{name: "empty home", home: "", want: "/var/lib/termgate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			if tt.unsetHome {
				os.Unsetenv("HOME")
			}
			if got := DefaultStateDir(); got != tt.want {
				t.Errorf("DefaultStateDir() = %q, want %q", got, tt.want)
			}
		})
	}
}
