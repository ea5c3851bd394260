package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/termgate/termgate/sessions"
)

// The checks of single values, run when a value is set (so a config
// file's bad value is refused with its line); their errors are predicates
// about the value.

func checkBufferSize(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n < sessions.MinBufferSize {
		return errors.New("is too small: the replay buffer needs at least 10KiB")
	}
	return nil
}

func checkScrollback(s string) error {
	if s == "auto" {
		return nil
	}
	n, err := parseSize(s)
	switch {
	case err != nil:
		return fmt.Errorf("%w (or auto: --buffer-size)", err)
	case n < sessions.MinBufferSize:
		return errors.New("is too small: at least 10KiB (the replay promises 10KiB of recent output)")
	case n > maxScrollback:
		return errors.New("is too large: at most 8MiB (a snapshot must fit in a client's 16MiB queue)")
	}
	return nil
}

func checkRecordSize(s string) error {
	_, err := parseRecordSize(s)
	return err
}

func checkUploadSize(s string) error {
	if n, err := parseRecordSize(s); err != nil || n <= 0 {
		return errors.New("is not a positive size: use one such as 1GiB or 100MiB")
	}
	return nil
}

func checkLogLevel(s string) error {
	var level slog.Level
	if level.UnmarshalText([]byte(s)) != nil {
		return errors.New("is not a log level: use debug, info, warn or error")
	}
	return nil
}

// settle turns the values, once every source has been read, into the
// options the gateway runs with, and refuses combinations of flags that
// do not go together.
func settle(o *options, sz sizeFlags) error {
	var err error
	if o.recordInput && o.recordDir == "" {
		return errors.New("--record-input needs --record-dir (where the recordings are written)")
	}
	// The values were checked when set: these conversions do not fail.
	if o.recordMaxSize, err = parseRecordSize(sz.recordMax); err != nil {
		return fmt.Errorf("--record-max-size %q %w", sz.recordMax, err)
	}
	if o.recordMaxTotal, err = parseRecordSize(sz.recordTotal); err != nil {
		return fmt.Errorf("--record-max-total %q %w", sz.recordTotal, err)
	}
	if o.maxUploadSize, err = parseRecordSize(sz.maxUpload); err != nil {
		return fmt.Errorf("--max-upload-size %q %w", sz.maxUpload, err)
	}
	if o.bufferSize, err = parseSize(sz.buffer); err != nil {
		return fmt.Errorf("--buffer-size %q %w", sz.buffer, err)
	}
	o.scrollback = o.bufferSize
	if sz.scrollback != "auto" {
		if o.scrollback, err = parseSize(sz.scrollback); err != nil {
			return fmt.Errorf("--scrollback %q %w", sz.scrollback, err)
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both (PEM certificate and key files) or neither (plain HTTP)")
	}
	if o.backend != "kubernetes" && (o.kubeconfig != "" || o.kubeNamespace != "") {
		return errors.New("--kubeconfig and --kube-namespace go with --backend kubernetes")
	}
	if o.signinStateSecret != "" && o.backend != "kubernetes" {
		return errors.New("--signin-state-secret goes with --backend kubernetes (the Secret is in the gateway's namespace); elsewhere the sign-in state is in <state-dir>/signins")
	}
	if o.durable && o.backend == "local" {
		return errors.New("--durable needs --backend docker or kubernetes: a local shell is the gateway's own child and cannot outlive it (drop --durable or TERMGATE_DURABLE)")
	}
	if o.hostKey == "" {
		o.hostKey = filepath.Join(o.stateDir, "ssh_host_ed25519_key")
	}
	if o.authorizedKeys == "" {
		o.authorizedKeys = filepath.Join(o.stateDir, "authorized_keys")
	}
	if o.tokenFile == "" {
		o.tokenFile = filepath.Join(o.stateDir, "api_token")
	}
	return nil
}
