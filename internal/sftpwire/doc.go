// Package sftpwire frames the SFTP wire (version 3,
// draft-ietf-secsh-filexfer-02) for the two places termgate reads it
// without serving it: the gateway's audit of a transfer (sshd/sftpaudit.go)
// and the holder's limits@openssh.com shim in front of pkg/sftp
// (cmd/termgate-holder/sftplimits.go). It uses the standard library only,
// so the in-container holder links nothing else through it.
//
// A packet is a uint32 length, then that many bytes: a type byte, for
// most types a uint32 request id, then the type's fields (uint32, uint64,
// and strings: a uint32 length, then the bytes). The pieces:
//
//   - the packet type constants and the SSH_FXF_* open flags used here;
//   - Framer, which follows packet boundaries through a stream written in
//     pieces of any size, and Scanner, an io.Writer on a Framer that hands
//     each packet's head (its first bytes, bounded) to a callback;
//   - ReadHeader, which reads one packet's length and type from an
//     io.Reader;
//   - Fields, which reads a packet's fields: a short or lying packet makes
//     every later field zero and OK false, never a panic;
//   - AppendUint32, AppendUint64, AppendString and Finish, which build one.
//
// Everything here parses bytes from an untrusted peer: the input is
// bounded by the caller (Scanner keeps at most its head; ReadHeader reads
// five bytes), lengths are checked before they are used, and FuzzFramer
// and FuzzFields (framer_test.go) hold both to it.
//
// There are no goroutines and no locks: a Framer, a Scanner and a Fields
// belong to one goroutine at a time, their caller's.
package sftpwire
