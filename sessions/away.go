package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/termgate/termgate/screen/sanitize"
)

// While you were away (issue 23, item 4): a session remembers, per person
// (the Who of a client: a key's or token's name), when their last client
// of it left and where the output was then. When they come back (no other
// client of theirs still attached), Take gives their new client, after the
// replay, an in-band *Away: how long they were gone, how much output went
// by, and the commands that finished meanwhile with their exit statuses
// where the shell marks its prompts (osc133.go). Registry.Since returns
// the output since then (ssh HOST log INSTANCE).
//
// The book is bounded (awayPeople, the oldest forgotten first) and lives
// with the session: a reset starts a new one, empty.

const (
	// awayPeople is how many people a session remembers.
	awayPeople = 64
	// awayQuiet: a return this soon (a reconnect after a network blip,
	// whose output a resume carries anyway) gets no summary, unless a
	// command finished meanwhile.
	awayQuiet = 5 * time.Second
	// awayListed is how many commands the one-line summary names, and
	// awayLineCmd how much of each (the event carries them whole).
	awayListed  = 5
	awayLineCmd = 60
)

// awayMark is where one person left.
type awayMark struct {
	at     time.Time
	offset int64  // the output offset then
	seq    uint64 // commands finished by then
}

// Away is the in-band event a person's client gets on their return, after
// the replay (SSH: a [termgate] line; WebSocket: an "away" event). It is
// not final: the client stays attached.
type Away struct {
	Gone  time.Duration
	Bytes int64 // output bytes produced meanwhile
	// Marked: the shell marks its prompts (OSC 133), so Finished counts.
	Marked bool
	// Finished is how many commands finished meanwhile; Commands lists
	// the last of them (at most 32), oldest first.
	Finished int
	Commands []FinishedCommand
}

// String is the one-line summary:
// "away 12m: 3.4 MB of output, 2 commands finished: make (exit 0), make test (exit 2)".
func (a *Away) String() string { return "away " + AwayDuration(a.Gone) + ": " + a.Summary() }

// Summary is the summary without how long: "3.4 MB of output, …".
func (a *Away) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of output", awayBytes(a.Bytes))
	if !a.Marked {
		return b.String()
	}
	switch a.Finished {
	case 0:
		b.WriteString(", no command finished")
		return b.String()
	case 1:
		b.WriteString(", 1 command finished")
	default:
		fmt.Fprintf(&b, ", %d commands finished", a.Finished)
	}
	listed := a.Commands[max(0, len(a.Commands)-awayListed):]
	named := true
	for _, c := range listed {
		named = named && c.Command != ""
	}
	if len(listed) < a.Finished {
		fmt.Fprintf(&b, ", the last %d", len(listed))
	}
	if !named {
		b.WriteString(" (exit ")
		for i, c := range listed {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(exitText(c))
		}
		b.WriteString(")")
		return b.String()
	}
	b.WriteString(": ")
	for i, c := range listed {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (exit %s)", clipRunes(c.Command, awayLineCmd), exitText(c))
	}
	return b.String()
}

// clipRunes cuts s to n characters, marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func exitText(c FinishedCommand) string {
	if !c.ExitKnown {
		return "?"
	}
	return fmt.Sprint(c.Exit)
}

// AwayDuration is "45s", "12m", "3h5m".
func AwayDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// awayBytes is "512 B", "12.0 KB", "3.4 MB" (decimal units; 999,960
// bytes is 1.0 MB, not 1000.0 KB).
func awayBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n) / 1e3
	for _, unit := range []string{"KB", "MB"} {
		if v < 999.95 {
			return fmt.Sprintf("%.1f %s", v, unit)
		}
		v /= 1e3
	}
	return fmt.Sprintf("%.1f GB", v)
}

// awayBook is what the away summary reads: where each person left and
// the shell's marks. It has a lock of its own so that the pump follows the
// marks outside Session.mu (deliver). The lock is taken after Session.mu,
// and the pump takes it before it lets Session.mu go (relay): so whoever
// reads the book under Session.mu finds the marks fed up to the ring's
// end, and the offsets and counts it records agree. Nothing is called
// with it held.
type awayBook struct {
	mu    sync.Mutex
	left  map[string]awayMark // guarded by mu
	marks marks               // guarded by mu
}

// leftLocked records that c left; when it was its person's last client
// here, their mark moves to now. Called with Session.mu held, after c was
// taken out of clients.
func (s *Session) leftLocked(c *Client) {
	who := c.who.Who
	if who == "" || s.attachedLocked(who) {
		return
	}
	b := &s.away
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == nil {
		b.left = map[string]awayMark{}
	}
	if _, ok := b.left[who]; !ok && len(b.left) >= awayPeople {
		oldest := ""
		for w, m := range b.left {
			if oldest == "" || m.at.Before(b.left[oldest].at) {
				oldest = w
			}
		}
		delete(b.left, oldest)
	}
	b.left[who] = awayMark{at: s.clock.Now(), offset: s.ring.End(), seq: b.marks.total}
}

// attachedLocked reports whether a client of who is attached.
func (s *Session) attachedLocked(who string) bool {
	for c := range s.clients {
		if c.who.Who == who {
			return true
		}
	}
	return false
}

// returnedLocked is the summary for who coming back, or nil: none when
// they never left this session, still have a client here, or come back
// within awayQuiet with no command finished. Called with Session.mu held,
// before the new client is in clients.
func (s *Session) returnedLocked(who string) *Away {
	if who == "" || s.attachedLocked(who) {
		return nil
	}
	a, _, ok := s.awayLocked(who)
	if !ok || a.Gone < awayQuiet && a.Finished == 0 {
		return nil
	}
	return a
}

// awayLocked is who's summary up to the ring's end, and their mark; false
// when they never left. Called with Session.mu held.
func (s *Session) awayLocked(who string) (*Away, awayMark, bool) {
	b := &s.away
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.left[who]
	if !ok {
		return nil, m, false
	}
	a := &Away{Gone: s.clock.Since(m.at), Bytes: s.ring.End() - m.offset, Marked: b.marks.seen}
	a.Commands, a.Finished = b.marks.since(m.seq)
	return a, m, true
}

// ErrNeverLeft: the person has not left the session (since its last
// reset), so there is no "since" to show.
var ErrNeverLeft = errors.New("never left")

// NeverLeftMessage is the user-facing text for ErrNeverLeft.
func NeverLeftMessage(name string) string {
	return fmt.Sprintf("you have not detached from %s's session since it started: nothing to show (ssh -t %s@HOST shows its screen)", name, name)
}

// AwayLog is the output since a person's last detach (Registry.Since).
type AwayLog struct {
	Left time.Time // when they left
	// Output is the session's output since then, without terminal queries,
	// as far as the replay buffer still reaches; Missing counts the bytes
	// it no longer holds (the start is then cut at a line's start).
	Output  []byte
	Missing int64
	Away    Away
}

// Since returns what the instance's session printed since who's last
// client of it left.
func (r *Registry) Since(ctx context.Context, name, who string) (AwayLog, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return AwayLog{}, err
	}
	return s.since(who)
}

func (s *Session) since(who string) (AwayLog, error) {
	if who == "" {
		return AwayLog{}, ErrNeverLeft
	}
	s.mu.Lock()
	a, m, ok := s.awayLocked(who)
	if !ok {
		s.mu.Unlock()
		return AwayLog{}, ErrNeverLeft
	}
	l := AwayLog{Left: m.at, Away: *a}
	start := s.ring.Start()
	held := s.ring.Bytes()
	s.mu.Unlock()
	// Sanitized outside the lock: the pump must not wait for it.
	if m.offset < start {
		l.Missing = start - m.offset
		l.Output = sanitize.Replay(held, true)
	} else {
		l.Output = sanitize.StripQueriesFrom(held, int(m.offset-start))
	}
	return l, nil
}
