package holder

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/termgate/termgate/internal/names"
)

// The gateway's side of the protocol trusts nothing a holder says: the
// holder runs inside the instance, which is untrusted (CONTRACT.md,
// "Durable sessions" item 6), and a holder socket may be anyone's. Every
// number and name in its frames is checked here against what the gateway
// configured before it is used, and a frame that breaks the protocol ends
// that one connection with an error wrapping ErrProtocol.

// ErrProtocol is wrapped by the errors for a holder's frame that breaks the
// protocol: a replay longer than any gateway gives a holder, offsets that
// do not follow, a reset of another session, a session id that is not
// one. Only that holder's connection ends.
var ErrProtocol = errors.New("holder protocol violation")

// MaxReplay bounds the replay a holder may announce: the largest
// --buffer-size a gateway accepts (1 GiB), so no holder a gateway started
// has a larger ring. A holder announcing more is broken or hostile.
const MaxReplay = 1 << 30

// DefaultReplayLimit is ReplayLimit until SetReplayLimit is called: a
// client's queue (sessions.Config.ClientQueue's default), which no replay
// larger than it could reach anyway.
const DefaultReplayLimit = 16 << 20

var replayLimit atomic.Int64

// SetReplayLimit sets how much of a holder's replay this process keeps:
// the gateway's --buffer-size, the ring it gives every holder it starts
// (and keeps itself for each session). A longer replay (a holder started
// with a larger buffer) is read, but only its last n bytes are kept. n <= 0
// restores DefaultReplayLimit. It is a setting of the process, like its
// flags: the gateway calls it once at start.
func SetReplayLimit(n int) {
	if n <= 0 {
		replayLimit.Store(0)
		return
	}
	replayLimit.Store(int64(min(n, MaxReplay)))
}

// ReplayLimit is how many bytes of a holder's replay a Client keeps.
func ReplayLimit() int64 {
	if n := replayLimit.Load(); n > 0 {
		return n
	}
	return DefaultReplayLimit
}

// maxText bounds the free text a holder sends (an error's message, an
// exit's cause, a build name): it ends up in logs and user messages.
const maxText = 256

// clip shortens a holder's text to maxText bytes.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return s[:maxText] + "…"
}

// checkSessionID refuses a session id a holder names that the gateway
// could not have made: ids become markers, file names of recordings and
// log fields. Empty means none (the gateway then uses its own).
func checkSessionID(what, id string) error {
	if id != "" && !names.ValidSessionID(id) {
		return fmt.Errorf("%w: %s session id %q", ErrProtocol, what, clip(id))
	}
	return nil
}

// checkHelloFields checks the numbers of a holder's hello.
func checkHelloFields(h HelloMsg) error {
	if err := checkSessionID("hello", h.Session); err != nil {
		return err
	}
	if h.Offset < 0 || h.PID < 0 || h.Created < 0 {
		return fmt.Errorf("%w: hello with offset %d, pid %d, created %d", ErrProtocol, h.Offset, h.PID, h.Created)
	}
	// A size outside 1..1000 is not used (the session keeps its own), but
	// it is not a reason to refuse the holder.
	return nil
}

// checkReplay checks a replay's header: its bytes lie within the offsets
// and are no more than any holder buffers.
func checkReplay(rep ReplayMsg) error {
	if err := checkSessionID("replay", rep.Session); err != nil {
		return err
	}
	if rep.Start < 0 || rep.Start > rep.Offset {
		return fmt.Errorf("%w: replay from %d to %d", ErrProtocol, rep.Start, rep.Offset)
	}
	if rep.Offset-rep.Start > MaxReplay {
		return fmt.Errorf("%w: replay of %d bytes, more than any holder buffers (%d)", ErrProtocol, rep.Offset-rep.Start, MaxReplay)
	}
	return nil
}

// checkReset refuses a reset that is not of the session this connection
// holds, or whose fresh session id the gateway could not have made.
func (c *Client) checkReset(m ResetMsg) error {
	if m.OldSession != c.session {
		return fmt.Errorf("%w: reset of session %q, but this connection holds %q", ErrProtocol, clip(m.OldSession), c.session)
	}
	if m.NewSession == "" || m.NewSession == m.OldSession {
		return fmt.Errorf("%w: reset of %q into %q", ErrProtocol, c.session, clip(m.NewSession))
	}
	return checkSessionID("reset's fresh", m.NewSession)
}
