package main

import (
	"errors"
	"github.com/termgate/termgate/sshd"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/termgate/termgate/keys"
)

// options are the settings, from the command line, the environment
// (TERMGATE_<NAME>) and the config file (--config), in that precedence.
type options struct {
	sshAddr, httpAddr   string
	stateDir            string
	hostKey             string
	authorizedKeys      string
	tokenFile           string
	backend             string
	shell               string
	idleTimeout         time.Duration
	oidcIssuer          string
	oidcClientID        string
	oidcSecretFile      string
	oidcGroupsClaim     string
	oidcScopes          []string
	oidcSessionMax      time.Duration
	oidcKeyTTL          time.Duration
	oidcSSH             string
	publicURL           string
	policies            keys.Policies // the config file's policies:
	maxKeep             time.Duration
	maxPerInstance      int // --max-sessions-per-instance
	maxNamedPerKey      int // --max-named-sessions
	sizePolicy          string
	notifyJoins         bool
	bufferSize          int
	instanceLabel       string
	allowedOrigins      []string
	logLevel, logFormat string
	shutdownTimeout     time.Duration
	localInstances      []string
	publicHost          string
	auditLog            string
	trustedUserCAKeys   string
	tlsCert, tlsKey     string
	httpRateLimit       float64
	replay              string
	scrollback          int // bytes
	recordDir           string
	recordInput         bool
	recordMaxSize       int64
	recordMaxTotal      int64
	durable             bool
	toolbox             string
	kubeconfig          string
	kubeNamespace       string
	signinStateSecret   string
	sshCompat           bool
	acceptEnv           string // --accept-env, checked by sshd.ParseAcceptEnv
	portForwarding      bool
	agentForwarding     bool
	forwardIdleTimeout  time.Duration
	fileTransfer        bool
	maxUploadSize       int64
	version             bool
	config              string // the --config file, "" for none
	help, helpMan       bool
}

// sizeFlags hold the size flags as written; settle converts them once the
// last source has been read (--scrollback auto depends on --buffer-size).
type sizeFlags struct {
	buffer, scrollback, recordMax, recordTotal, maxUpload string
}

// newFlagSet defines every flag on a fresh set writing into o and sz.
// Names, defaults and TERMGATE_ variables are contract (CONTRACT.md
// "Build and run"); each flag's group in --help is in flagGroups, the
// values the shell completions offer in flagChoices. A value's type name
// (Type) is what --help shows after the flag and what tells the
// completions to offer files (file) or directories (dir).
func newFlagSet(o *options, sz *sizeFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("termgate", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // parseFlags words the errors; main prints them
	fs.Usage = func() {}
	str := func(p *string, name, def, typ, usage string) {
		fs.Var(newText(p, def, typ, nil), name, usage)
	}
	checked := func(p *string, name, def, typ string, check func(string) error, usage string) {
		fs.Var(newText(p, def, typ, check), name, usage)
	}
	boolean := func(p *bool, name string, def bool, usage string) {
		fs.VarPF(newBool(p, def), name, "", usage).NoOptDefVal = "true"
	}
	dur := func(p *time.Duration, name string, def time.Duration, positive bool, usage string) {
		fs.Var(newDuration(p, def, positive), name, usage)
	}
	list := func(p *[]string, name, usage string) { fs.Var(&listValue{p}, name, usage) }

	// General.
	fs.VarPF(newBool(&o.help, false), "help", "h", "print this help, and exit").NoOptDefVal = "true"
	boolean(&o.version, "version", false, "print the version and commit, and exit")
	str(&o.config, "config", "", "file", "read settings from this YAML file (keys are the flag names: idle-timeout: 45m); a flag wins over the environment, which wins over the file")
	boolean(&o.helpMan, "help-man", false, "print the manual page (roff), and exit")
	_ = fs.MarkHidden("help-man")

	// Listeners.
	checked(&o.sshAddr, "ssh-addr", ":2222", "addr", listenAddr, "SSH listener address")
	checked(&o.httpAddr, "http-addr", ":8080", "addr", listenAddr, "HTTP + WebSocket listener address")
	str(&o.publicHost, "public-host", "", "list", "host names browsers and ssh reach the gateway by (comma-separated, each NAME or NAME:PORT); the first is printed in the SSH command and browser URL (default: localhost); logins and WebSockets are refused for any Host but these, localhost and IP addresses")
	list(&o.allowedOrigins, "allowed-origins", "extra browser origins allowed to open WebSockets (comma-separated, e.g. https://ops.example.com)")
	str(&o.tlsCert, "tls-cert", "", "file", "serve HTTPS with this PEM certificate (chain); needs --tls-key; reloaded on SIGHUP")
	str(&o.tlsKey, "tls-key", "", "file", "the PEM private key of --tls-cert")
	fs.Var(newRate(&o.httpRateLimit, 20), "http-rate-limit", "HTTP requests per second one client address may make (bursts of 5 seconds' worth); 0 turns the limit off")
	boolean(&o.sshCompat, "ssh-compat-algorithms", false, "also offer the NIST ECDH key exchanges (ecdh-sha2-nistp256/384/521) and the encrypt-and-MAC MACs (hmac-sha2-256/512), for SSH clients that have nothing better; ssh-audit fails them")

	// State and authentication.
	str(&o.stateDir, "state-dir", keys.DefaultStateDir(), "dir", "directory for generated state (host key, API token, authorized_keys)")
	str(&o.hostKey, "host-key", "", "file", "SSH host key (default <state-dir>/ssh_host_ed25519_key; created on first start)")
	str(&o.authorizedKeys, "authorized-keys", "", "file", "OpenSSH authorized_keys file (default <state-dir>/authorized_keys; reloaded on change or SIGHUP)")
	str(&o.tokenFile, "token-file", "", "file", "HTTP/WebSocket bearer tokens, one per line (default <state-dir>/api_token; generated on first start)")
	str(&o.oidcIssuer, "oidc-issuer", "", "url", "sign people in with this OpenID Connect provider (its issuer URL); the config file's policies: say what each identity may do")
	str(&o.oidcClientID, "oidc-client-id", "", "id", "with --oidc-issuer: this gateway's client ID at the provider")
	str(&o.oidcSecretFile, "oidc-client-secret-file", "", "file", "with --oidc-issuer: a file holding the client secret (absent: a public client, PKCE only)")
	str(&o.oidcGroupsClaim, "oidc-groups-claim", "groups", "claim", "with --oidc-issuer: the ID token claim that lists the identity's groups")
	list(&o.oidcScopes, "oidc-scopes", "with --oidc-issuer: the scopes asked for (default openid,email,profile,groups)")
	dur(&o.oidcSessionMax, "oidc-session-max", 12*time.Hour, true, "with --oidc-issuer: how long a browser sign-in lasts; its clients are then cut")
	dur(&o.oidcKeyTTL, "oidc-key-ttl", 12*time.Hour, true, "with --oidc-issuer: how long an SSH key that signed in through the browser is let in without signing in again")
	checked(&o.oidcSSH, "oidc-ssh", "auto", "mode", oneOf("an SSH sign-in mode", "auto, required or off", flagChoices["oidc-ssh"]...), "with --oidc-issuer: auto (a key no authorized_keys line accepts may sign in through the browser), required (every key must; authorized_keys and certificates let nobody in) or off")
	str(&o.signinStateSecret, "signin-state-secret", "", "name", "with --backend kubernetes and --oidc-issuer: keep logouts and remembered SSH keys in this Secret of the gateway's namespace, not in <state-dir>/signins, for replicas that share no writable directory (needs get and update on it)")
	str(&o.publicURL, "public-url", "", "url", "how browsers reach the gateway (https://ops.example.com); with --oidc-issuer the provider sends them back to PUBLIC_URL/oidc/callback")
	str(&o.trustedUserCAKeys, "trusted-user-ca-keys", "", "file", "accept OpenSSH user certificates signed by the CA public keys in this file (authorized_keys format; @revoked KEY lines); a certificate's principals are the instance patterns it may use; reloaded on change or SIGHUP")

	// Backend.
	checked(&o.backend, "backend", "docker", "name", oneOf("a backend", "docker, kubernetes or local", flagChoices["backend"]...), "instance backend: docker, kubernetes or local")
	str(&o.instanceLabel, "instance-label", "", "label", "only containers (pods with --backend kubernetes) with this label (KEY or KEY=VALUE) are instances")
	str(&o.shell, "shell", "auto", "command", "command started in the instance; auto picks bash when present, else sh")
	checked(&o.toolbox, "toolbox", "auto", "mode", oneOf("a toolbox mode", "auto, always or never", flagChoices["toolbox"]...), "with --backend docker or kubernetes: when sessions and commands run in termgate's toolbox (a POSIX shell and common tools the gateway copies into the instance): auto (only where the instance has no /bin/sh: distroless and FROM scratch images), always or never (such an instance gets no shell)")
	str(&o.kubeconfig, "kubeconfig", "", "file", "with --backend kubernetes: the kubeconfig file (default: KUBECONFIG, else the pod's service account in a cluster, else ~/.kube/config)")
	str(&o.kubeNamespace, "kube-namespace", "", "name", "with --backend kubernetes: the namespace whose pods are instances (default: the kubeconfig context's, or the gateway pod's own)")
	list(&o.localInstances, "local-instances", "with --backend local: comma-separated instance names allowed (default: any valid name)")

	// Sessions.
	dur(&o.idleTimeout, "idle-timeout", 30*time.Minute, true, "reap a session after this long with no client attached")
	checked(&sz.buffer, "buffer-size", "64KiB", "size", checkBufferSize, "replay buffer per session (bytes, or with a KiB/MiB suffix; at least 10KiB)")
	checked(&o.replay, "replay", "screen", "mode", oneOf("a replay mode", "screen (redraw the terminal's state) or raw (replay the last bytes)", flagChoices["replay"]...), "what a (re)attaching client gets first: screen (the terminal's state redrawn) or raw (the last bytes of output)")
	checked(&sz.scrollback, "scrollback", "auto", "size", checkScrollback, "with --replay screen: scrollback kept per session, as drawn (bytes, or with a KiB/MiB suffix; auto: --buffer-size)")
	dur(&o.shutdownTimeout, "shutdown-timeout", 9*time.Second, false, "how long SIGTERM waits for sessions to end")
	dur(&o.maxKeep, "max-keep", 24*time.Hour, true, "the longest ssh HOST keep (or the page's Keep) may keep a session with no client attached")
	fs.Var(newCount(&o.maxPerInstance, 8), "max-sessions-per-instance", "the most sessions one instance may have at once, its default session included (ssh -t INSTANCE+NAME@HOST opens a named one); past it a new one is refused")
	fs.Var(newCount(&o.maxNamedPerKey, 32), "max-named-sessions", "the most named sessions one key, token or identity may have started and still running, across instances; past it a new one is refused")
	checked(&o.sizePolicy, "size-policy", "latest", "policy", oneOf("a size policy", "latest, smallest or largest", flagChoices["size-policy"]...), "the shell's window size: latest (the read-write client that most recently attached, resized or typed), smallest or largest of the read-write clients'")
	boolean(&o.notifyJoins, "notify-joins", false, "tell SSH clients with a [termgate] line when someone joins or leaves their session (the page always shows who is attached)")

	// Durable sessions.
	boolean(&o.durable, "durable", false, "hold each session inside its instance (a holder program the gateway copies there), so that shells outlive gateway restarts, upgrades and crashes and several gateways can serve them; needs --backend docker or kubernetes")

	// Recording.
	str(&o.recordDir, "record-dir", "", "dir", "record every session as an asciicast v2 file DIR/INSTANCE/SESSION.cast (created 0700; files 0600)")
	boolean(&o.recordInput, "record-input", false, "with --record-dir: also record what clients type (\"i\" events); off by default because input holds passwords")
	checked(&sz.recordMax, "record-max-size", defaultRecordMaxSize, "size", checkRecordSize, "with --record-dir: cut a recording that reaches this size (bytes, or KiB/MiB/GiB; 0: unlimited); the session goes on")
	checked(&sz.recordTotal, "record-max-total", defaultRecordMaxTotal, "size", checkRecordSize, "with --record-dir: what all recordings in it may hold together (bytes, or KiB/MiB/GiB; 0: unlimited); past it recordings are cut and new sessions not recorded until old recordings are removed")

	// File transfer and port forwarding.
	boolean(&o.fileTransfer, "file-transfer", true, "let clients read and write instances' files (sftp, scp, the HTTP files routes); false refuses them")
	checked(&sz.maxUpload, "max-upload-size", "1GiB", "size", checkUploadSize, "the largest file PUT /api/instances/NAME/files takes (bytes, or KiB/MiB/GiB)")
	boolean(&o.agentForwarding, "agent-forwarding", true, "let SSH clients forward their agent (ssh -A) to sessions and commands: a socket in the instance answered by the client's agent; false refuses it")
	boolean(&o.portForwarding, "port-forwarding", true, "let SSH clients forward connections into and out of instances (ssh -L, -D, -W: dialled from inside the instance; ssh -R: listening inside it); false refuses every forward")
	checked(&o.acceptEnv, "accept-env", "LANG LC_*", "names", func(v string) error { _, err := sshd.ParseAcceptEnv(v); return err },
		"the environment variables (names or shell globs, space-separated) that SSH clients' SetEnv/SendEnv pass to commands and new sessions; others are dropped, as sshd does; TERMGATE_* never")
	dur(&o.forwardIdleTimeout, "forward-idle-timeout", 15*time.Minute, false, "close a forwarded connection that moved no byte either way for this long (0: never)")

	// Logging.
	checked(&o.logLevel, "log-level", "info", "level", checkLogLevel, "debug, info, warn or error")
	checked(&o.logFormat, "log-format", "auto", "format", oneOf("a log format", "auto, text or json", flagChoices["log-format"]...), "auto (text when stderr is a terminal, else json), text (one short line per event, for people) or json (one object per line, for journald and log shippers)")
	str(&o.auditLog, "audit-log", "", "file", "append the audit trail as JSON lines to this file (default <state-dir>/audit.log, 0600); - writes it into the main log instead, marked audit=true")
	return fs
}

// flagChoices are the values of the flags that take one of a few words:
// their checks and the shell completions both use them.
var flagChoices = map[string][]string{
	"backend":     {"docker", "kubernetes", "local"},
	"replay":      {"screen", "raw"},
	"size-policy": {"latest", "smallest", "largest"},
	"oidc-ssh":    {"auto", "required", "off"},
	"log-level":   {"debug", "info", "warn", "error"},
	"log-format":  {"auto", "text", "json"},
	"toolbox":     {"auto", "always", "never"},
}

// maxScrollback keeps a screen snapshot well within a client's queue
// (sessions.Config.ClientQueue, 16 MiB): a bigger one would drop the client.
const maxScrollback = 8 << 20

// parseSize reads "65536", "64KiB", "1MiB" (KB/MB/K/M are read as binary too).
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 || n > (1<<30)/mult {
		return 0, errors.New("is not a size: use bytes or a KiB/MiB suffix, e.g. 64KiB")
	}
	return n * mult, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
