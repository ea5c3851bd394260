// Package remote is what the listeners ask of a backend besides the
// persistent session: one-off commands (ssh INSTANCE@HOST CMD), an SFTP
// server (sftp, scp, the HTTP files routes) and forwarded connections (ssh
// -L, -D, -W), each in one instance. The container backends implement it
// once, in backend/exechost (Docker and Kubernetes alike; Kubernetes dials
// through the API's own port-forward); backend/local for development.
//
// Like sessions, it depends on nothing but the standard library and
// sessions' types, so the listeners never import a backend.
//
// It starts no goroutine and takes no lock: a Process or Conn's own are
// its backend's, and Close stops and waits for them.
package remote
