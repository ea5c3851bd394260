package oidc_test

import (
	"path/filepath"
	"testing"

	"github.com/termgate/termgate/oidc"
	"github.com/termgate/termgate/oidc/recordstest"
)

// The seam's checks on the directory (two DirRecords on one directory, as
// two gateways on one host) and on memory.
func TestDirRecords(t *testing.T) {
	recordstest.Run(t, func(t *testing.T) (oidc.Records, oidc.Records) {
		dir := filepath.Join(t.TempDir(), "signins")
		a, err := oidc.NewDirRecords(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := oidc.NewDirRecords(dir)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}

func TestMemRecords(t *testing.T) {
	recordstest.Run(t, func(*testing.T) (oidc.Records, oidc.Records) {
		m := oidc.NewMemRecords()
		return m, m
	})
}
