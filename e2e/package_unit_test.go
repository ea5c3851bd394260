package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// The installed systemd unit, read and run without systemd, for
// TestDebianPackage: the [Service] settings, and the command line that
// starts ExecStart= with the identity and privileges those settings give
// (setpriv), in an approximation of its file-system sandbox (unshare and
// mount: mountSandbox). The rest, such as the system call filter, is
// systemd's own; the test lints those lines with systemd-analyze.

// unitSettings are a unit's [Service] lines, key to values in file order
// (a key given twice, such as SystemCallFilter=, keeps both).
type unitSettings map[string][]string

func readUnit(t *testing.T, path string) unitSettings {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the installed unit: %v", err)
	}
	defer f.Close()
	u := unitSettings{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
		case section == "Service":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is no KEY=VALUE line", path, line)
			}
			u[k] = append(u[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one is the value of a key given once; it fails t otherwise.
func (u unitSettings) one(t *testing.T, key string) string {
	t.Helper()
	if len(u[key]) != 1 {
		t.Fatalf("the unit gives %s= %d times (%q), want once", key, len(u[key]), u[key])
	}
	return u[key][0]
}

// execStart is ExecStart='s argument vector. Only a plain command line is
// read (no quotes, variables, specifiers or prefixes such as - or +): the
// point is to run exactly what systemd would, so anything needing
// systemd's own parsing fails the test rather than being guessed at.
func (u unitSettings) execStart(t *testing.T) []string {
	t.Helper()
	line := u.one(t, "ExecStart")
	if strings.ContainsAny(line, `"'\$%;`) || strings.ContainsAny(line[:1], "-@+!:|") {
		t.Fatalf("ExecStart=%s: the test runs plain command lines only", line)
	}
	return strings.Fields(line)
}

// mountSandbox is a shell script that approximates, in a mount namespace
// of its own, the file system the unit's ProtectSystem=strict,
// StateDirectory=, ProtectHome=yes and PrivateTmp=yes give the service:
// every mount read-only but /proc, /sys and /dev; the state directory
// writable; /home, /root and /run/user inaccessible; /tmp and /var/tmp
// empty and private. systemd does it differently in detail (and does more:
// PrivateDevices=, ProtectKernel*=, the system call filter), but what the
// gateway may read and write is the same, so the test can start the
// service in it and check what its user reaches. Settings the unit does
// not have are not applied.
func (u unitSettings) mountSandbox(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	if len(u["ProtectSystem"]) > 0 && u.one(t, "ProtectSystem") == "strict" {
		b.WriteString(`findmnt -rn -o TARGET | while read -r m; do
	case $m in /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) continue ;; esac
	mount -o remount,bind,ro "$m" 2>/dev/null || true
done
`)
		for _, dir := range u["StateDirectory"] {
			for _, name := range strings.Fields(dir) {
				p := "/var/lib/" + name
				b.WriteString("mount --bind " + p + " " + p + " && mount -o remount,bind,rw " + p + "\n")
			}
		}
	}
	if len(u["ProtectHome"]) > 0 && u.one(t, "ProtectHome") == "yes" {
		b.WriteString("for d in /home /root /run/user; do [ ! -d $d ] || mount -t tmpfs -o ro,mode=000 tmpfs $d; done\n")
	}
	if len(u["PrivateTmp"]) > 0 && u.one(t, "PrivateTmp") == "yes" {
		b.WriteString("mount -t tmpfs -o mode=1777 tmpfs /tmp\nmount -t tmpfs -o mode=1777 tmpfs /var/tmp\n")
	}
	return b.String()
}

// serviceUser is the identity the unit's User=, Group= and
// SupplementaryGroups= give the service.
type serviceUser struct {
	name, home string
	uid, gid   int
	groups     []int // supplementary: the primary group and SupplementaryGroups=
}

func (u unitSettings) user(t *testing.T) serviceUser {
	t.Helper()
	pw, err := user.Lookup(u.one(t, "User"))
	if err != nil {
		t.Fatalf("the unit's User=: %v", err)
	}
	gr, err := user.LookupGroup(u.one(t, "Group"))
	if err != nil {
		t.Fatalf("the unit's Group=: %v", err)
	}
	s := serviceUser{name: pw.Username, home: pw.HomeDir, uid: atoi(t, pw.Uid), gid: atoi(t, gr.Gid)}
	s.groups = append(s.groups, s.gid)
	for _, line := range u["SupplementaryGroups"] {
		for _, name := range strings.Fields(line) {
			g, err := user.LookupGroup(name)
			if err != nil {
				t.Fatalf("the unit's SupplementaryGroups=%s: %v (is the Docker engine installed?)", name, err)
			}
			s.groups = append(s.groups, atoi(t, g.Gid))
		}
	}
	return s
}

// command is argv run as the service would run it: in the unit's
// file-system sandbox (mountSandbox), as its user and groups,
// with no capability left to hold or gain when the unit says so
// (CapabilityBoundingSet= empty, NoNewPrivileges=yes), the unit's UMask=
// and the environment systemd gives a service with User= (PATH, HOME,
// USER, LOGNAME, SHELL; nothing of the test's own).
func (s serviceUser) command(t *testing.T, u unitSettings, argv ...string) *exec.Cmd {
	t.Helper()
	groups := make([]string, len(s.groups))
	for i, g := range s.groups {
		groups[i] = strconv.Itoa(g)
	}
	priv := []string{"setpriv", "--reuid=" + strconv.Itoa(s.uid), "--regid=" + strconv.Itoa(s.gid), "--groups=" + strings.Join(groups, ",")}
	if u.one(t, "NoNewPrivileges") == "yes" {
		priv = append(priv, "--no-new-privs")
	}
	if u.one(t, "CapabilityBoundingSet") == "" {
		priv = append(priv, "--bounding-set=-all", "--inh-caps=-all")
	}
	umask := "0022" // systemd's default
	if len(u["UMask"]) > 0 {
		umask = u.one(t, "UMask")
	}
	// unshare gives sh a mount namespace of its own, where sh builds the
	// sandbox, sets the umask and execs setpriv, which execs argv: the
	// process started is argv itself, as under systemd.
	script := "set -e\n" + u.mountSandbox(t) + "umask " + umask + "\nexec \"$@\"\n"
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh"},
		append(priv, append([]string{"--"}, argv...)...)...)...)
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + s.home, "USER=" + s.name, "LOGNAME=" + s.name, "SHELL=/usr/sbin/nologin", // postinst's
	}
	cmd.Dir = "/"
	return cmd
}
