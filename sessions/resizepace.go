package sessions

import "time"

// Resizes are paced per session (issue 20 D4: one client sent ~9,000 a
// second to sizes up to 1000x1000, and every one reached the screen
// emulator, the recording and the backend, freezing the session for three
// times the storm). A client may ask as often as it likes: asking only
// records the size (setSizeLocked). The resizer then applies at most
// resizeBurst sizes at once and resizeRate a second after that, each time
// the latest asked for, so the excess is coalesced, never refused, and the
// last size asked for is always the one applied. A window dragged by hand
// asks for a few dozen sizes a second; it ends at its final size within
// 1/resizeRate of the last one.
const (
	resizeRate  = 20
	resizeBurst = 20
)

// resizePace is a token bucket on wall-clock time (sizes are not paced in
// the clock tests fake: nothing waits on it for longer than 1/resizeRate).
// Only the resizer uses it, and one resizer runs at a time (Session.rz.resizing,
// under Session.mu, orders them).
type resizePace struct {
	tokens float64
	last   time.Time
}

// take spends a token and returns 0, or returns how long to wait for one.
func (p *resizePace) take(now time.Time) time.Duration {
	if p.last.IsZero() {
		p.tokens = resizeBurst
	} else {
		p.tokens = min(resizeBurst, p.tokens+now.Sub(p.last).Seconds()*resizeRate)
	}
	p.last = now
	if p.tokens >= 1 {
		p.tokens--
		return 0
	}
	return time.Duration((1 - p.tokens) / resizeRate * float64(time.Second))
}
