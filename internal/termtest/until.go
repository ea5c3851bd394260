package termtest

import "time"

// Until polls cond every poll until it holds or within has passed, and
// reports whether it held: the wait on a condition that a test would
// otherwise give a fixed time.Sleep. The caller fails the test, saying
// what it waited for, when it did not hold (its assertion stays its own).
func Until(within, poll time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
}
