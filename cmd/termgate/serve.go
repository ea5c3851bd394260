package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/termgate/termgate/sshd"
	"github.com/termgate/termgate/websock"
)

// serve opens both listeners, announces them, serves until ctx is
// cancelled or a listener fails (SIGHUP reloads the credentials and
// reopens the audit log meanwhile), then shuts down and waits for both
// Serve goroutines.
func (w *wiring) serve(ctx context.Context, sshSrv *sshd.Server, webSrv *websock.Server) error {
	o, log, creds := w.o, w.log, w.creds
	sshLn, err := net.Listen("tcp", o.sshAddr)
	if err != nil {
		return fmt.Errorf("SSH listener: %w (choose another --ssh-addr)", err)
	}
	httpLn, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		sshLn.Close()
		return fmt.Errorf("HTTP listener: %w (choose another --http-addr)", err)
	}
	announce(os.Stderr, term.IsTerminal(int(os.Stderr.Fd())), o, log, sshLn.Addr(), httpLn.Addr(), creds.hostKey.PublicKey(), creds.newToken, webSrv.TLS())

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- serveErr("ssh", sshSrv.Serve(sshLn)) })
	wg.Go(func() { errs <- serveErr("http", webSrv.Serve(httpLn)) })
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	// Signed-in SSH keys expire, are forgotten or their sign-in logs out,
	// here or on another gateway: the sign-in state's poller rechecks the
	// attached clients then (creds.reloaded; contract: within 5 s).
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			if o.durable {
				log.Info("shutting down: durable sessions keep running in their instances (the next gateway adopts them); ending the others")
			} else {
				log.Info("shutting down: ending every session")
			}
			break loop
		case err := <-errs:
			runErr = err
			break loop
		case <-hup:
			creds.reload(log)
			// After a rotation (logrotate renames, then signals) the
			// records go to the new file.
			if err := w.audit.Reopen(); err != nil {
				log.Error("audit log not reopened: the records still go to the file open until now", "err", err)
			}
		}
	}
	// No sweep or adoption may race the sessions' shutdown.
	w.stopStartUp()
	shutdown(o.shutdownTimeout, log, w.reg, sshSrv, webSrv)
	wg.Wait()
	return runErr
}
