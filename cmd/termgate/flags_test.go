package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFlagsDefaultsAndEnvironment(t *testing.T) {
	o, err := parseFlags([]string{"--ssh-addr", ":2200"}, env(map[string]string{
		"TERMGATE_SSH_ADDR":        ":9999", // the flag wins
		"TERMGATE_IDLE_TIMEOUT":    "90s",
		"TERMGATE_BUFFER_SIZE":     "1MiB",
		"TERMGATE_STATE_DIR":       "/tmp/tg",
		"TERMGATE_ALLOWED_ORIGINS": "https://a.example, https://b.example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.sshAddr != ":2200" || o.httpAddr != ":8080" {
		t.Errorf("addrs %q %q", o.sshAddr, o.httpAddr)
	}
	if o.idleTimeout != 90*time.Second || o.bufferSize != 1<<20 {
		t.Errorf("idle %v buffer %d", o.idleTimeout, o.bufferSize)
	}
	if o.hostKey != filepath.Join("/tmp/tg", "ssh_host_ed25519_key") || o.tokenFile != "/tmp/tg/api_token" || o.authorizedKeys != "/tmp/tg/authorized_keys" {
		t.Errorf("state paths %q %q %q", o.hostKey, o.tokenFile, o.authorizedKeys)
	}
	if len(o.allowedOrigins) != 2 || o.allowedOrigins[1] != "https://b.example" {
		t.Errorf("origins %q", o.allowedOrigins)
	}
}

func TestFlagErrorsAreClear(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--buffer-size", "4KiB"}, nil, "at least 10KiB"},
		{[]string{"--buffer-size", "lots"}, nil, "not a size"},
		{[]string{"--backend", "k8s"}, nil, "use docker, kubernetes or local"},
		{[]string{"--kube-namespace", "dev"}, nil, "go with --backend kubernetes"},
		{nil, map[string]string{"TERMGATE_KUBECONFIG": "/k"}, "go with --backend kubernetes"},
		{[]string{"--signin-state-secret", "termgate-signins"}, nil, "--signin-state-secret goes with --backend kubernetes"},
		{nil, map[string]string{"TERMGATE_IDLE_TIMEOUT": "soon"}, "TERMGATE_IDLE_TIMEOUT"},
		{[]string{"--idle-timeout", "-1s"}, nil, "must be positive"},
		{[]string{"extra"}, nil, "unexpected argument"},
		{[]string{"--replay", "vt"}, nil, "use screen"},
		{nil, map[string]string{"TERMGATE_REPLAY": "tmux"}, "use screen"},
		{[]string{"--scrollback", "1KiB"}, nil, "at least 10KiB"},
		{[]string{"--scrollback", "64MiB"}, nil, "at most 8MiB"},
		{[]string{"--durable", "--backend", "local"}, nil, "--durable needs --backend docker or kubernetes"},
		{[]string{"--backend", "local"}, map[string]string{"TERMGATE_DURABLE": "true"}, "--durable needs --backend docker or kubernetes"},
		{nil, map[string]string{"TERMGATE_DURABLE": "maybe"}, "TERMGATE_DURABLE"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, env(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseFlags(%q, %v) = %v, want an error mentioning %q", tt.args, tt.env, err, tt.want)
		}
	}
}

// --replay defaults to screen (the contract) and reads TERMGATE_REPLAY;
// --scrollback defaults to the buffer size.
func TestReplayFlags(t *testing.T) {
	o, err := parseFlags([]string{"--buffer-size", "32KiB"}, env(nil))
	if err != nil || o.replay != "screen" || o.scrollback != 32<<10 {
		t.Fatalf("defaults: %+v, %v; want screen and a 32KiB scrollback", o, err)
	}
	o, err = parseFlags(nil, env(map[string]string{"TERMGATE_REPLAY": "raw", "TERMGATE_SCROLLBACK": "1MiB"}))
	if err != nil || o.replay != "raw" || o.scrollback != 1<<20 {
		t.Fatalf("from the environment: %+v, %v; want raw and 1MiB", o, err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"65536": 65536, "64KiB": 65536, "64kib": 65536, "1MiB": 1 << 20, "10 KiB": 10240, "2M": 2 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-5", "0", "99999999999MiB", "1.5MiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestDurableFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{nil, nil, false},
		{[]string{"--durable"}, nil, true},
		{[]string{"--durable", "--backend", "kubernetes"}, nil, true},
		{nil, map[string]string{"TERMGATE_DURABLE": "true"}, true},
		{[]string{"--durable=false"}, map[string]string{"TERMGATE_DURABLE": "true"}, false}, // the flag wins
	} {
		o, err := parseFlags(tt.args, env(tt.env))
		if err != nil {
			t.Fatalf("parseFlags(%q, %v): %v", tt.args, tt.env, err)
		}
		if o.durable != tt.want {
			t.Errorf("parseFlags(%q, %v): durable %v, want %v", tt.args, tt.env, o.durable, tt.want)
		}
	}
}

func TestForwardFlags(t *testing.T) {
	o, err := parseFlags(nil, env(map[string]string{"TERMGATE_FORWARD_IDLE_TIMEOUT": "2m", "TERMGATE_PORT_FORWARDING": "false"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.forwardIdleTimeout != 2*time.Minute || o.portForwarding {
		t.Errorf("forward idle %v, port forwarding %v", o.forwardIdleTimeout, o.portForwarding)
	}
	if o, err = parseFlags(nil, env(nil)); err != nil || o.forwardIdleTimeout != 15*time.Minute || !o.portForwarding {
		t.Errorf("defaults: %v %v, %v", o.forwardIdleTimeout, o.portForwarding, err)
	}
	if forwardIdle(0) >= 0 || forwardIdle(time.Second) != time.Second {
		t.Error("--forward-idle-timeout 0 must mean never")
	}
}
