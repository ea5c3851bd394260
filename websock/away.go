package websock

import (
	"time"

	"github.com/termgate/termgate/sessions"
)

// awayEvent: the caller came back to a session they had left (an addition
// to the contract's events; see sessions.Away). It follows the replay; the
// page shows it as a banner above the terminal, not in it.
type awayEvent struct {
	Type    string `json:"type"` // "away"
	Seconds int64  `json:"seconds"`
	Bytes   int64  `json:"bytes"`
	// Marked: the shell marks its prompts (OSC 133), so Finished and
	// Commands say which commands finished; otherwise both are empty.
	Marked bool `json:"marked"`
	// Finished counts the commands that finished meanwhile; Commands
	// lists the last of them (at most 32), oldest first.
	Finished int           `json:"finished"`
	Commands []awayCommand `json:"commands"`
	Summary  string        `json:"summary"` // the one-line text SSH clients get
}

type awayCommand struct {
	Command string `json:"command"` // "" when it could not be recovered
	Exit    *int   `json:"exit"`    // null when the shell gave none
	At      string `json:"at"`      // RFC 3339
}

func newAwayEvent(a *sessions.Away) awayEvent {
	ev := awayEvent{Type: "away", Seconds: int64(a.Gone / time.Second), Bytes: a.Bytes, Marked: a.Marked,
		Finished: a.Finished, Commands: make([]awayCommand, 0, len(a.Commands)), Summary: a.String()}
	for _, c := range a.Commands {
		ac := awayCommand{Command: c.Command, At: c.At.UTC().Format(time.RFC3339)}
		if c.ExitKnown {
			ac.Exit = &c.Exit
		}
		ev.Commands = append(ev.Commands, ac)
	}
	return ev
}
