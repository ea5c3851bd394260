package main

import "testing"

func TestRelayProcs(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMAXPROCS" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		env     string
		def     int
		want    int
		fromEnv bool
	}{
		{"one CPU", "", 1, 1, false},
		{"two CPUs: one P, so a hand-off does not wake a second thread", "", 2, 1, false},
		{"larger hosts keep the runtime's default", "", 8, 8, false},
		{"GOMAXPROCS set: the runtime's value stands", "2", 2, 2, true},
	} {
		n, fromEnv := relayProcs(env(tc.env), tc.def)
		if n != tc.want || fromEnv != tc.fromEnv {
			t.Errorf("%s: relayProcs(GOMAXPROCS=%q, def %d) = %d, %v; want %d, %v", tc.name, tc.env, tc.def, n, fromEnv, tc.want, tc.fromEnv)
		}
	}
}
