package keys

import "testing"

// TestMayWrite: only an identity that may use the instance and is not an
// observer may type into it (and read recorded input: issue 18 L2).
func TestMayWrite(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		inst string
		want bool
	}{
		{Identity{}, "web1", true},
		{Identity{Instances: []string{"web*"}}, "web1", true},
		{Identity{Instances: []string{"web*"}}, "db1", false},
		{Identity{ReadOnly: true}, "web1", false},
		{Identity{ReadOnly: true, Instances: []string{"web*"}}, "web1", false},
		{Identity{}, "../x", false},
	} {
		if got := tc.id.MayWrite(tc.inst); got != tc.want {
			t.Errorf("%+v MayWrite(%q) = %v, want %v", tc.id, tc.inst, got, tc.want)
		}
	}
}
