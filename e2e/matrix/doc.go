// Package matrix holds one test, TestEndings: how every stream ends, on
// every path (issue "Reliability, round four"). Its columns are the ways a
// session is held — {ordinary, durable} × {docker, kubernetes, local}, less
// the local backend's durable sessions, which it refuses — and its rows the
// ways a session or a stream ends: the shell exits, exits with a
// background job holding its terminal, exits with status 3, a forwarded
// target closes first, the client half-closes first, a client stops
// reading for 20 s and resumes, the engine becomes unreachable and comes
// back. Each cell checks what the clients see (real OpenSSH, a WebSocket)
// and what is left in the instance (ps inside), against the real Docker
// engine and Kubernetes cluster and a real gateway process.
//
// Every gateway reaches its engine through a proxy of the test's (proxy.go),
// which the engine row cuts and restores; the local backend has no engine,
// so that row has no local cell.
//
// The package has no production code; this file exists for its comment.
package matrix
