package sessions

// ShortID is the form of a session id the main log writes: its first 8
// hex digits, enough to tell a host's sessions apart and to grep the
// audit trail (which keeps the whole id) for the rest.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
