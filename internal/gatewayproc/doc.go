// Package gatewayproc starts a termgate binary as a child process, for the
// tests and tools that drive a real gateway from outside (e2e, the
// Kubernetes gateway tests, web's browser test, tgsoak, tgbench).
//
// The gateway listens on ports the OS picks (127.0.0.1:0), so two runs
// never race for a port; Start reads the bound addresses from the JSON
// "termgate is listening" line the gateway logs once both listeners are
// open, then waits for /healthz. The log of each run is kept in memory
// (and, optionally, appended to a file that outlives restarts). Stop sends
// SIGTERM and kills after a bound; Kill is the crash. A restart is another
// Start with the same Config: the state directory, and with it the host
// key, the gateway's id and its durable sessions, carry over; the ports
// are new.
//
// Goroutines: each Gateway has one that waits for the process (and os/exec
// one that copies its output); both end when the process has exited, which
// Stop and Kill wait for. A caller that started a gateway stops it.
package gatewayproc
