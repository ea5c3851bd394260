// Package kubernetes is termgate's sessions.Backend over the Kubernetes
// API (client-go): instances are running pods in one namespace and a
// session's shell is a TTY exec in the pod's first container, or in the
// container its termgate.dev/container annotation names. Shells, kills,
// sweeps and durable sessions are backend/exechost's; this package gives it
// the API's execs (stream.go: client-go's push-style stream, turned into a
// pull one by exechost.StartPush), and uploads and look-ups over them
// (upload.go: exechost.UploadByExec and ExistsByExec).
//
// What the API shapes:
//
//   - An exec is one stream (WebSocket, falling back to SPDY, as kubectl
//     does). PodExecOptions has no environment: every exec runs through
//     `/bin/sh -c execWrapper`, which exports it, so the container needs
//     /bin/sh. The process starts as soon as the stream is up; the window
//     size follows on the resize stream right after.
//   - There is no file upload: the holder goes in over an exec's stdin.
//   - An instance's ID is the pod's UID, the container's name and the
//     runtime's container ID: a restarted container gets a new ID, so its
//     session ends and the next attach starts a fresh one.
//   - Watch keeps a pod informer (list, then watch; client-go's reflector
//     relists and rewatches by itself when the API server goes away).
//
// Goroutines: each exec's stream runs on one goroutine its
// exechost.PushStream owns (Close ends and waits for it); Watch's informer
// is shut down when Watch returns. Locks: none of its own beyond the
// informer's (the stream's are exechost's).
package kubernetes
