// Package record writes termgate's session recordings (--record-dir): one
// asciicast v2 file per session, DIR/INSTANCE/SESSION.cast, that `asciinema
// play` replays, and opens them again for GET /api/recordings (open.go). The
// format, what goes into a file (output "o", sizes "r", markers "m", and
// input "i" only with --record-input), the permissions and the size limit
// are described in docs/RECORDINGS.md; the promises about them, with their
// tests, in SECURITY.md.
//
// A Recorder is the sessions.Config.Observe hook: every session gets a
// Recording, which takes the session's output, window sizes and, when
// Config.Input is set, the input clients wrote to the shell, without ever
// blocking the session. Events wait in a bounded queue (Config.QueueBytes,
// 8 MiB) that one goroutine per recording encodes (encode.go) and writes to
// the file; what does not fit is dropped, counted, and marked in the file
// with an "m" event. A write error (a full disk) stops that recording only.
// Files are created with O_EXCL|O_NOFOLLOW relative to the opened
// directories (file.go), never through a symbolic link.
//
// A held (durable) session adopted by a restarted gateway continues its
// file (adopt.go, continue.go): the file is read back strictly (read.go,
// scan.go), its byte-number markers say which output byte comes next, and
// what was printed while no gateway recorded it is taken from the holder's
// replay, or marked as lost. An exclusive flock on the file keeps a second
// gateway sharing DIR from writing into it; otherwise the recording goes on
// in SESSION.continued-N.cast.
//
// Goroutines: one per Recording, started by Observe and waited for by
// Recorder.Close (Recorder.wg). A second recording of the same session (a
// held session whose holder connection broke and was made again) waits for
// the first one's file to be closed, then continues it.
//
// Input events reach only credentials that may type into the instance:
// CopyWithoutInput serves a recording without them to the others
// (strip.go). A renamed instance's recording moves to the new name's
// directory and goes on there (rename.go).
//
// Locks: Recorder.mu guards the set of live recordings; Recording.mu
// guards its queue. The session's hooks only append to the queue under
// Recording.mu; encoding and file I/O happen in the recording's goroutine
// outside it. The two are never held together.
package record
