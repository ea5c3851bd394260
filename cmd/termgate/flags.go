package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// flagHelp reports that --help was shown.
var flagHelp = flag.ErrHelp

// options are the parsed flags; every flag also reads TERMGATE_<NAME>.
type options struct {
	sshAddr, httpAddr   string
	stateDir            string
	hostKey             string
	authorizedKeys      string
	tokenFile           string
	backend             string
	shell               string
	idleTimeout         time.Duration
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
	kubeconfig          string
	kubeNamespace       string
	sshCompat           bool
	portForwarding      bool
	forwardIdleTimeout  time.Duration
	fileTransfer        bool
	maxUploadSize       int64
	version             bool
}

func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("termgate", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var buffer, origins, locals, scrollback, recordMax, recordTotal, maxUpload string
	fs.StringVar(&o.sshAddr, "ssh-addr", ":2222", "SSH listener address")
	fs.BoolVar(&o.sshCompat, "ssh-compat-algorithms", false, "also offer the NIST ECDH key exchanges (ecdh-sha2-nistp256/384/521) and the encrypt-and-MAC MACs (hmac-sha2-256/512), for SSH clients that have nothing better; ssh-audit fails them")
	fs.StringVar(&o.httpAddr, "http-addr", ":8080", "HTTP + WebSocket listener address")
	fs.StringVar(&o.stateDir, "state-dir", keys.DefaultStateDir(), "directory for generated state (host key, API token, authorized_keys)")
	fs.StringVar(&o.hostKey, "host-key", "", "SSH host key (default <state-dir>/ssh_host_ed25519_key; created on first start)")
	fs.StringVar(&o.authorizedKeys, "authorized-keys", "", "OpenSSH authorized_keys file (default <state-dir>/authorized_keys; reloaded on change or SIGHUP)")
	fs.StringVar(&o.tokenFile, "token-file", "", "HTTP/WebSocket bearer tokens, one per line (default <state-dir>/api_token; generated on first start)")
	fs.StringVar(&o.backend, "backend", "docker", "instance backend: docker, kubernetes or local")
	fs.StringVar(&o.shell, "shell", "auto", "command started in the instance; auto picks bash when present, else sh")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Minute, "reap a session after this long with no client attached")
	fs.StringVar(&buffer, "buffer-size", "64KiB", "replay buffer per session (bytes, or with a KiB/MiB suffix; at least 10KiB)")
	fs.StringVar(&o.replay, "replay", "screen", "what a (re)attaching client gets first: screen (the terminal's state redrawn) or raw (the last bytes of output)")
	fs.StringVar(&scrollback, "scrollback", "auto", "with --replay screen: scrollback kept per session, as drawn (bytes, or with a KiB/MiB suffix; auto: --buffer-size)")
	fs.StringVar(&o.instanceLabel, "instance-label", "", "only containers (pods with --backend kubernetes) with this label (KEY or KEY=VALUE) are instances")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with --backend kubernetes: the kubeconfig file (default: KUBECONFIG, else the pod's service account in a cluster, else ~/.kube/config)")
	fs.StringVar(&o.kubeNamespace, "kube-namespace", "", "with --backend kubernetes: the namespace whose pods are instances (default: the kubeconfig context's, or the gateway pod's own)")
	fs.StringVar(&origins, "allowed-origins", "", "extra browser origins allowed to open WebSockets (comma-separated, e.g. https://ops.example.com)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 9*time.Second, "how long SIGTERM waits for sessions to end")
	fs.StringVar(&locals, "local-instances", "", "with --backend local: comma-separated instance names allowed (default: any valid name)")
	fs.StringVar(&o.publicHost, "public-host", "", "host names browsers and ssh reach the gateway by (comma-separated, each NAME or NAME:PORT); the first is printed in the SSH command and browser URL (default: localhost); logins and WebSockets are refused for any Host but these, localhost and IP addresses")
	fs.StringVar(&o.auditLog, "audit-log", "", "append the audit trail as JSON lines to this file (default: into the main log, marked audit=true)")
	fs.StringVar(&o.trustedUserCAKeys, "trusted-user-ca-keys", "", "accept OpenSSH user certificates signed by the CA public keys in this file (authorized_keys format; @revoked KEY lines); a certificate's principals are the instance patterns it may use; reloaded on change or SIGHUP")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain); needs --tls-key; reloaded on SIGHUP")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	fs.StringVar(&o.recordDir, "record-dir", "", "record every session as an asciicast v2 file DIR/INSTANCE/SESSION.cast (created 0700; files 0600)")
	fs.StringVar(&recordMax, "record-max-size", defaultRecordMaxSize, "with --record-dir: cut a recording that reaches this size (bytes, or KiB/MiB/GiB; 0: unlimited); the session goes on")
	fs.StringVar(&recordTotal, "record-max-total", defaultRecordMaxTotal, "with --record-dir: what all recordings in it may hold together (bytes, or KiB/MiB/GiB; 0: unlimited); past it recordings are cut and new sessions not recorded until old recordings are removed")
	fs.BoolVar(&o.recordInput, "record-input", false, "with --record-dir: also record what clients type (\"i\" events); off by default because input holds passwords")
	fs.BoolVar(&o.durable, "durable", false, "hold each session inside its instance (a holder program the gateway copies there), so that shells outlive gateway restarts, upgrades and crashes and several gateways can serve them; needs --backend docker or kubernetes")
	fs.BoolVar(&o.portForwarding, "port-forwarding", true, "let SSH clients forward TCP connections into instances (ssh -L, -D, -W: dialled from inside the instance); false refuses every forward")
	fs.DurationVar(&o.forwardIdleTimeout, "forward-idle-timeout", 15*time.Minute, "close a forwarded connection that moved no byte either way for this long (0: never)")
	fs.BoolVar(&o.fileTransfer, "file-transfer", true, "let clients read and write instances' files (sftp, scp, the HTTP files routes); false refuses them")
	fs.StringVar(&maxUpload, "max-upload-size", "1GiB", "the largest file PUT /api/instances/NAME/files takes (bytes, or KiB/MiB/GiB)")
	fs.BoolVar(&o.version, "version", false, "print the version and commit, and exit")
	fs.Float64Var(&o.httpRateLimit, "http-rate-limit", 20, "HTTP requests per second one client address may make (bursts of 5 seconds' worth); 0 turns the limit off")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, flagHelp
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all settings are flags; see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "TERMGATE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && !set[f.Name] && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", env, v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}

	var err error
	if o.recordInput && o.recordDir == "" {
		return nil, errors.New("--record-input needs --record-dir (where the recordings are written)")
	}
	if o.recordMaxSize, err = parseRecordSize(recordMax); err != nil {
		return nil, fmt.Errorf("--record-max-size: %w", err)
	}
	if o.recordMaxTotal, err = parseRecordSize(recordTotal); err != nil {
		return nil, fmt.Errorf("--record-max-total: %w", err)
	}
	if o.maxUploadSize, err = parseRecordSize(maxUpload); err != nil || o.maxUploadSize <= 0 {
		return nil, fmt.Errorf("--max-upload-size %q: use a positive size such as 1GiB or 100MiB", maxUpload)
	}
	if o.bufferSize, err = parseSize(buffer); err != nil {
		return nil, fmt.Errorf("--buffer-size: %w", err)
	}
	if o.bufferSize < sessions.MinBufferSize {
		return nil, fmt.Errorf("--buffer-size %s is too small: the replay buffer needs at least 10KiB", buffer)
	}
	switch o.replay {
	case "screen", "raw":
	default:
		return nil, fmt.Errorf("--replay %q: use screen (redraw the terminal's state) or raw (replay the last bytes)", o.replay)
	}
	if scrollback != "auto" {
		if o.scrollback, err = parseSize(scrollback); err != nil {
			return nil, fmt.Errorf("--scrollback: %w", err)
		}
		if o.scrollback < sessions.MinBufferSize {
			return nil, fmt.Errorf("--scrollback %s is too small: at least 10KiB (the replay promises 10KiB of recent output)", scrollback)
		}
		if o.scrollback > maxScrollback {
			return nil, fmt.Errorf("--scrollback %s is too large: at most 8MiB (a snapshot must fit in a client's 16MiB queue)", scrollback)
		}
	} else {
		o.scrollback = o.bufferSize
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both (PEM certificate and key files) or neither (plain HTTP)")
	}
	if o.httpRateLimit < 0 {
		return nil, fmt.Errorf("--http-rate-limit must be 0 (off) or positive, got %v", o.httpRateLimit)
	}
	if o.idleTimeout <= 0 {
		return nil, fmt.Errorf("--idle-timeout must be positive, got %s", o.idleTimeout)
	}
	switch o.backend {
	case "docker", "local", "kubernetes":
	default:
		return nil, fmt.Errorf("--backend %q: use docker, kubernetes or local", o.backend)
	}
	if o.backend != "kubernetes" && (o.kubeconfig != "" || o.kubeNamespace != "") {
		return nil, errors.New("--kubeconfig and --kube-namespace go with --backend kubernetes")
	}
	if o.durable && o.backend == "local" {
		return nil, errors.New("--durable needs --backend docker or kubernetes: a local shell is the gateway's own child and cannot outlive it (drop --durable or TERMGATE_DURABLE)")
	}
	o.allowedOrigins = splitList(origins)
	o.localInstances = splitList(locals)
	if o.hostKey == "" {
		o.hostKey = filepath.Join(o.stateDir, "ssh_host_ed25519_key")
	}
	if o.authorizedKeys == "" {
		o.authorizedKeys = filepath.Join(o.stateDir, "authorized_keys")
	}
	if o.tokenFile == "" {
		o.tokenFile = filepath.Join(o.stateDir, "api_token")
	}
	return o, nil
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
		return 0, fmt.Errorf("%q is not a size: use bytes or a KiB/MiB suffix, e.g. 64KiB", s)
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
