// Package kubernetes is termgate's sessions.Backend over the Kubernetes
// API (client-go): instances are running pods in one namespace and a
// session's shell is a TTY exec in the pod's first container, or in the
// container its termgate.dev/container annotation names.
//
// What the API shapes:
//
//   - An exec is one stream (WebSocket, falling back to SPDY, as kubectl
//     does). It has no ID, cannot be killed or re-attached, and closing it
//     does not end the process. So, as with Docker, every shell carries
//     TERMGATE_SESSION=<marker> in its environment and Kill runs a second
//     exec of procmark.KillScript. PodExecOptions has no environment: the
//     shell is started through `/bin/sh -c` which exports the marker, so
//     the container needs /bin/sh.
//   - The exec starts the process as soon as the stream is up; the window
//     size follows on the resize stream right after.
//   - An instance's ID is the pod's UID, the container's name and the
//     runtime's container ID: a restarted container gets a new ID, so its
//     session ends and the next attach starts a fresh one.
//   - Watch keeps a pod informer (list, then watch; client-go's reflector
//     relists and rewatches by itself when the API server goes away).
package kubernetes
