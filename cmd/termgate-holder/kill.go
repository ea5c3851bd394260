package main

import (
	"errors"
	"os"
	"strings"

	"github.com/termgate/termgate/backend/procmark"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/names"
)

// killCmd is `termgate-holder kill [--install-as PATH] MODE...`: the kill
// script's modes (procmark.KillScript: markers, --prefix=P, --all;
// --orphans and --holder-dir= have nothing to apply to where this runs)
// for an instance without /bin/sh. It prints what it ended, as the script
// does.
func killCmd(args []string) error {
	var markers, prefixes []string
	all := false
	for _, a := range args {
		switch {
		case a == procmark.AllSessions:
			all = true
		case a == procmark.Orphans, strings.HasPrefix(a, "--holder-dir="):
		case strings.HasPrefix(a, "--prefix="):
			if p := strings.TrimPrefix(a, "--prefix="); p != "" {
				prefixes = append(prefixes, p)
			}
		case validMarker(a):
			markers = append(markers, a)
		default:
			return errors.New("kill: not a marker or mode: " + a)
		}
	}
	holder.KillMarkers(os.Stdout, markers, prefixes, all)
	return nil
}

// validMarker is a procmark marker: SESSION or GATEWAYID.SESSION.
func validMarker(m string) bool {
	id, session, dotted := strings.Cut(m, ".")
	if !dotted {
		return names.ValidSessionID(m)
	}
	return names.ValidSessionID(id) && names.ValidSessionID(session)
}
