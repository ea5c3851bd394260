// Package exechost is the backend-neutral half of the container backends:
// everything termgate does inside an instance through nothing but execs
// and file uploads. A backend (backend/docker, backend/kubernetes) gives
// an Executor, shaped like client-go's remotecommand: Exec(argv, TTY,
// stdin, environment) returning a Stream (Read, Write, CloseWrite, Resize,
// Wait, Stderr, Close), Upload, Exists, State (is the instance running,
// stopping, paused or gone: how an exec in it ended), HolderDirs and
// Instances. A Host built on it owns, once for every backend:
//
//   - the shell: a TTY exec marked TERMGATE_SESSION (procmark; shellspec.go
//     derives the marker, TERM and size from the start spec), whose Read
//     ends with the cause (*sessions.ExitError, or ErrInstanceGone when
//     the instance stopped under it: a signal exit waits Config.StopGrace
//     for the instance to be seen stopping);
//   - Kill and Sweep: neither API can kill an exec, so a second exec runs
//     procmark.KillScript, one at a time per instance (procmark.Grouper);
//     a one-off command's sweep after it exited by itself waits
//     sweepGather to share one exec with the others ending then
//     (Grouper.KillLater), on the caller's goroutine;
//     where the instance has no /bin/sh, the holder's kill subcommand
//     instead (killnoshell.go: holder.KillMarkers, uploaded as a tool);
//   - durable sessions: the holder's upload (under a temporary name, which
//     the holder renames into place with --install-as) into the first of
//     HolderDirs where it lands and runs, the caches of instances that
//     cannot host it and of the directory that worked, the start ("serve
//     --attach"), Adopt, HeldInstances, and the connection (conn.go: the
//     holder protocol, its hello and replay, and how it ended);
//   - tools (tool.go, sftp.go): the holder's one-exec subcommands on any
//     Host, durable or not: SFTP ("termgate-holder sftp", else the
//     instance's own sftp-server, else a remote.Unavailable), rsync's
//     remote side (rsync.go: "termgate-holder rsync", else the instance's
//     own rsync), Dial and
//     DialUnix ("termgate-holder dial HOST:PORT|unix:PATH") and Listen
//     (listen.go, ssh -R), uploaded and launched as the holder is,
//     sharing its holderSite (the binary, the cannot and worked caches);
//   - remote forwarding (listen.go): one "termgate-holder listen" exec per
//     listener, whose stream carries only lines: "bound ADDR FETCH" (the
//     port chosen for port 0), then "conn TOKEN HOST PORT" per
//     connection the instance made to it; and one "termgate-holder fetch
//     FETCH TOKEN" exec per connection the client accepts, which takes
//     the connection's descriptor from the listener over an abstract
//     unix socket (FETCH; TOKEN is 128 random bits, good once) and is a
//     dial from then on (framed output, half-close both ways). A
//     connection never shares a stream with another: each has the
//     engine's and SSH's flow control of its own, and one that stalls
//     stalls only itself; multiplexing over the listener's stream would
//     need a window protocol of our own. The listener's stdin takes "drop
//     TOKEN" (the client refused the channel); its end (Close, the
//     gateway gone) ends the tool, which closes the listener (a unix
//     socket's file removed) and every connection not fetched (30 s at
//     most each); nothing stays in the instance;
//   - deployments kept apart (deployment.go): every holder is keyed per
//     instance from Config.HolderSecret, and a holder without the proof is
//     another deployment's: never adopted, listed, reset or ended.
//
// For a backend whose exec API pushes (client-go, Nomad, containerd),
// pushpull.go's StartPush makes the pull Stream (outpipe.go buffers the
// output), and uploadexec.go's UploadByExec and ExistsByExec are Upload
// and Exists over nothing but Exec: a new backend is an Executor plus its
// instance lookup.
//
// Goroutines: a HeldShell's connection owns one, which sends the client
// count whenever it changes (Release stops and waits for it). A
// PushStream owns one, running the backend's push call (Close ends and
// waits for it). Sweep and HeldInstances run Config.SweepWorkers calls at
// a time and wait for all. StartUp's startup.Worker sweeps (and adopts)
// in the background, SweepWorkers at a time, until its stop func; every
// marked exec waits for its instance's sweep (gatedExecutor). Other Streams' goroutines are the backend's.
// Every other call runs on its caller's goroutine.
//
// Locks: Shell.kmu and HeldShell.kmu serialize Kill (which does I/O under
// them: a second Kill waits for the first rather than racing it);
// Shell.wmu serializes writes to the stream; holderSite.mu guards the
// caches only; outPipe.mu, PushStream.smu and capBuffer.mu guard their
// buffers only. No lock is held while another is taken.
package exechost
