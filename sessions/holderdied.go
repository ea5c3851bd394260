package sessions

import "errors"

// ErrHolderDied is the cause a held session's clients get when its holder
// is gone (killed, say, by kill -9 or the OOM killer) while the instance
// runs on: the shell went with it, the backend ended the jobs the shell
// left behind, and a reconnect starts a new shell. Unlike ErrHolderLost
// (the holder lives; only the connection to it broke), nothing is left to
// return to.
var ErrHolderDied = errors.New("the session's holder died; the shell ended: reconnect for a new one")
