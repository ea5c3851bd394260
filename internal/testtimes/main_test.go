package main

import (
	"strings"
	"testing"
)

func TestReadSortsPackagesAndTests(t *testing.T) {
	in := `{"Action":"run","Package":"m/a","Test":"TestX"}
{"Action":"pass","Package":"m/a","Test":"TestX","Elapsed":1.5}
{"Action":"pass","Package":"m/a","Test":"TestX/sub","Elapsed":1.2}
{"Action":"fail","Package":"m/a","Test":"TestY","Elapsed":3}
not json: a build error
{"Action":"fail","Package":"m/a","Elapsed":4.6}
{"Action":"pass","Package":"m/b","Elapsed":9}
`
	pkgs, tests, err := read(strings.NewReader(in), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[0].Package != "m/b" || pkgs[1].Action != "fail" {
		t.Errorf("packages %+v, want m/b (9 s) then m/a (failed)", pkgs)
	}
	if len(tests) != 2 || tests[0].Test != "TestY" || tests[1].Test != "TestX" {
		t.Errorf("tests %+v, want TestY then TestX, no subtest", tests)
	}
	if _, tests, _ = read(strings.NewReader(in), true); len(tests) != 3 {
		t.Errorf("with subtests: %d tests, want 3", len(tests))
	}
	var out strings.Builder
	write(&out, pkgs, tests, 1)
	if !strings.Contains(out.String(), "TestY") || strings.Contains(out.String(), "TestX") {
		t.Errorf("-n 1 prints the slowest test only:\n%s", out.String())
	}
}
