// Package record writes termgate's session recordings: one asciicast v2
// file per session (DIR/INSTANCE/SESSION.cast, mode 0600, in a 0700
// directory per instance) that `asciinema play` replays.
//
// A Recorder is the sessions.Config.Observe hook: every session gets a
// Recording, which takes the session's output and window sizes without
// ever blocking it. Events wait in a bounded queue (Config.QueueBytes)
// that one goroutine per recording drains to the file; when the disk
// cannot keep up, the output that does not fit is dropped and a marker
// event ("m") in the file says how many bytes are missing. A write error
// (a full disk) stops that recording with an error in the log; the
// session goes on.
//
// File format (asciicast v2, one JSON value per line):
//
//	{"version":2,"width":80,"height":24,"timestamp":1700000000,"env":{"TERM":"xterm-256color"},"title":"web1"}
//	[0.104211,"o","$ "]
//	[2.500000,"r","120x40"]
//	[9.000001,"m","termgate: 1048576 bytes of output dropped: the recording could not keep up"]
//
// Times are seconds since the session started, with microseconds, and
// never decrease; gaps while nobody was attached stay in the file as they
// were. Output is text: asciicast stores JSON strings, which must be
// UTF-8, so a character cut between two reads of the shell's output is
// joined again before it is written, and every byte that is not part of
// valid UTF-8 is written as U+FFFD (as Go's []rune conversion and
// terminals do); such bytes cannot be recovered from the file.
//
// A held (durable) session adopted by a restarted gateway continues its
// file (adopt.go, continue.go): the file carries byte-number markers
// (scan.go) so that the output printed while no gateway recorded it is
// taken from the holder's replay from the first byte the file lacks, or
// marked as lost.
//
// Only the header and the events are written; input is never recorded.
package record
