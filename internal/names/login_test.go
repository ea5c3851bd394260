package names

import "testing"

func TestValidLogin(t *testing.T) {
	for _, tt := range []struct {
		login string
		ok    bool
	}{
		{"app", true}, {"deploy-2", true}, {"_svc", true}, {"a.b", true}, {"1000", true}, {"0", true},
		{"4294967294", true}, {"root", true}, {"abcdefghijklmnopqrstuvwxyz012345", true},
		{"", false}, {"-x", false}, {".hidden", false}, {"a:b", false}, {"a\nb", false}, {"a b", false},
		{"a@b", false}, {"a+b", false}, {"a/b", false}, {"4294967295", false}, {"99999999999", false},
		{"abcdefghijklmnopqrstuvwxyz0123456", false}, {"é", false}, {"007", false}, {"00000000000", false},
	} {
		if got := ValidLogin(tt.login); got != tt.ok {
			t.Errorf("ValidLogin(%q) = %v, want %v", tt.login, got, tt.ok)
		}
	}
	if uid, ok := LoginUID("1000"); !ok || uid != 1000 {
		t.Errorf("LoginUID(1000) = %d, %v", uid, ok)
	}
	if _, ok := LoginUID("app"); ok {
		t.Error("LoginUID(app) is numeric")
	}
}
