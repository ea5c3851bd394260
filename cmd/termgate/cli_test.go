package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// The command line as users meet it: the real binary, built once per test
// run with the version stamps `make build` gives it.

const (
	stampVersion = "v9.9.9-clitest"
	stampCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
	cliDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cliDir != "" {
		os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

// termgateBinary builds ./cmd/termgate as `make build` stamps it.
func termgateBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		if cliDir, cliErr = os.MkdirTemp("", "termgate-cli-"); cliErr != nil {
			return
		}
		cliBin = filepath.Join(cliDir, "termgate")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-o", cliBin,
			"-ldflags", "-X main.version="+stampVersion+" -X main.commit="+stampCommit, ".")
		if out, err := build.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// runTermgate runs the binary with args and an environment holding only
// PATH and HOME (nothing of the test's TERMGATE_ variables), and returns
// its stdout, stderr and exit status.
func runTermgate(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// The build (the first call's, up to minutes on a loaded machine)
	// comes before the run's own 30 s: it timed out the first test to
	// run the binary when the build took most of them.
	bin := termgateBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("termgate %q: %v", args, err)
	}
	return o.String(), e.String(), code
}

// TestCLIVersion: --version prints the stamped version and commit, exit 0.
func TestCLIVersion(t *testing.T) {
	out, errOut, code := runTermgate(t, nil, "--version")
	want := regexp.MustCompile(`^termgate ` + regexp.QuoteMeta(stampVersion) + ` \(commit ` + stampCommit[:12] + `, go\S+ \w+/\w+\)\n$`)
	if code != 0 || !want.MatchString(out) || errOut != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCLIHelp: --help and -h print the synopsis, every flag by group with
// its default, the environment variables and --config, and examples, on
// stdout with exit 0.
func TestCLIHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		out, errOut, code := runTermgate(t, nil, arg)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, errOut)
		}
		words := strings.Join(strings.Fields(out), " ") // the phrases that wrap
		for _, want := range []string{"--port-forwarding=false turns it off", "A flag wins over the environment, which wins over the file"} {
			if !strings.Contains(words, want) {
				t.Errorf("%s lacks %q", arg, want)
			}
		}
		for _, want := range []string{
			"Usage: termgate [--config FILE] [FLAG]...\n", "termgate completion bash|zsh|fish", "termgate --version",
			"\nListeners:\n", "\nState and authentication:\n", "\nBackend:\n", "\nSessions:\n", "\nRecording:\n",
			"\nDurable sessions:\n", "\nFile transfer and port forwarding:\n", "\nLogging:\n",
			"  --idle-timeout DURATION       reap a session", "(default 30m)", "(default :2222)", "(default 64KiB)",
			"  -h, --help ",
			"TERMGATE_<FLAG_IN_UPPER_SNAKE>", "TERMGATE_IDLE_TIMEOUT", "TERMGATE_CONFIG", "--config FILE",
			"\nExamples:\n", "source <(termgate completion bash)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q", arg, want)
			}
		}
		newFlagSet(&options{}, &sizeFlags{}).VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !notSettings[f.Name] && !strings.Contains(out, " "+envName(f.Name)+" ") && !strings.Contains(out, " "+envName(f.Name)+"\n") {
				t.Errorf("%s does not name %s", arg, envName(f.Name))
			}
			if shown := strings.Contains(out, "--"+f.Name+" ") || strings.Contains(out, "--"+f.Name+"\n"); shown == f.Hidden {
				t.Errorf("%s: --%s shown %v, hidden %v", arg, f.Name, shown, f.Hidden)
			}
		})
		for i, line := range strings.Split(out, "\n") {
			if len(line) > 100 {
				t.Errorf("%s line %d is %d wide: %q", arg, i+1, len(line), line)
			}
		}
	}
}

// TestCLIRefusesBadSettings: a bad flag, variable or config file stops the
// binary at once with exit status 2 and a message that says the fix.
func TestCLIRefusesBadSettings(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(unknown, []byte("ssh-addr: \"127.0.0.1:2222\"\nidle-timout: 45m\n"), 0o600)
	os.WriteFile(bad, []byte("# termgate\ndurable: true\n\nidle-timeout: 5\n"), 0o600)
	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--idle-timeout", "5"}, `termgate: --idle-timeout "5" is not a duration: it needs a unit; use 5s, 5m or a duration such as 30m`},
		{nil, []string{"--idle"}, "termgate: unknown flag --idle; did you mean --idle-timeout?"},
		{nil, []string{"--ssh-addr", "2222"}, `termgate: --ssh-addr "2222" is a port, not an address: write :2222`},
		{nil, []string{"--http-addr", "localhost"}, `termgate: --http-addr "localhost" is not an address: write HOST:PORT`},
		{[]string{"TERMGATE_IDLE_TIMEOUT=soon"}, nil, `termgate: TERMGATE_IDLE_TIMEOUT="soon" is not a duration`},
		{nil, []string{"--config", unknown}, "termgate: " + unknown + ` line 2: unknown key "idle-timout"; did you mean idle-timeout?`},
		{nil, []string{"--config", bad}, "termgate: " + bad + ` line 4: idle-timeout: "5" is not a duration`},
		{[]string{"TERMGATE_CONFIG=" + bad}, nil, "termgate: " + bad + ` line 4: idle-timeout: "5"`},
		{nil, []string{"--config", filepath.Join(dir, "missing.yaml")}, "termgate: --config " + filepath.Join(dir, "missing.yaml") + ": open"},
	} {
		out, errOut, code := runTermgate(t, tt.env, tt.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, tt.want) || !strings.HasSuffix(errOut, "\nTry 'termgate --help' for more information.\n") {
			t.Errorf("%v termgate %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.env, tt.args, code, out, errOut, tt.want)
		}
	}
}

// TestCLICompletionBash: bash with the generated completion loaded
// completes the flags, a flag's choices and the subcommand.
func TestCLICompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := `source <("$TG" completion bash)
complete -p termgate
c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _termgate; echo "$* => ${COMPREPLY[*]}"; }
c termgate --idle
c termgate --backend ''
c termgate --log-format j
c termgate --durable --rec
c termgate comp
c termgate completion ''
c termgate --state-dir "$DIR/st"
c termgate --ssh-addr ''
c termgate --backend = k
c termgate --replay =
`
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "state"), 0o700)
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TG=" + termgateBinary(t), "DIR=" + dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	for _, want := range []string{
		"complete -F _termgate termgate\n",
		"termgate --idle => --idle-timeout\n",
		"termgate --backend  => docker kubernetes local\n",
		"termgate --log-format j => json\n",
		"termgate --durable --rec => --record-dir --record-input --record-max-size --record-max-total\n",
		"termgate comp => completion\n",
		"termgate completion  => bash zsh fish\n",
		"termgate --state-dir " + dir + "/st => " + dir + "/state\n",
		"termgate --ssh-addr  => \n",
		"termgate --backend = k => kubernetes\n",
		"termgate --replay = => screen raw\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bash completion lacks %q:\n%s", want, out)
		}
	}
}

// TestCLICompletionZshFish: with the zsh or fish script loaded (when
// that shell is installed), the shell completes --idle, --backend's
// values and completion's shells.
func TestCLICompletionZshFish(t *testing.T) {
	tg := termgateBinary(t)
	if zsh, err := exec.LookPath("zsh"); err == nil {
		testZshCompletion(t, zsh, tg)
	} else {
		t.Log("no zsh: its completion is not loaded")
	}
	if fish, err := exec.LookPath("fish"); err == nil {
		script := `"$TG" completion fish | source; complete -C "termgate --idle"; complete -C "termgate --backend "; complete -C "termgate completion "`
		cmd := exec.Command(fish, "--no-config", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TG=" + tg, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		for _, want := range []string{"--idle-timeout\treap a session", "\ndocker\t", "\nkubernetes\t", "\nlocal\t", "\nbash\n", "\nzsh\n"} {
			if err != nil || !strings.Contains(string(out), want) {
				t.Errorf("fish: %v, lacks %q:\n%s", err, want, out)
			}
		}
	} else {
		t.Log("no fish: its completion is not loaded")
	}
	if _, errOut, code := runTermgate(t, nil, "completion", "tcsh"); code != 2 || !strings.Contains(errOut, `"tcsh" is not a shell this knows: use bash, zsh or fish`) {
		t.Errorf("completion tcsh: exit %d, %q", code, errOut)
	}
}

// testZshCompletion types into an interactive zsh (on zsh's own pseudo
// terminal, zpty) that loaded the script, presses Tab and reads what zsh
// completes: a flag, a flag's choices, completion's shells.
func testZshCompletion(t *testing.T, zsh, tg string) {
	dir := t.TempDir()
	rc := `autoload -U compinit && compinit -u -d "$DIR/zcompdump"
source <("$TG" completion zsh)
print -r -- "registered $_comps[termgate]"
`
	drive := `zmodload zsh/zpty
zpty z "ZDOTDIR=$DIR zsh -i"
zpty -r z line '*registered _termgate*' || exit 1
zpty -w -n z $'termgate --idl\t'
zpty -r z out '*--idle-timeout=*' && print "idle ok"
zpty -w -n z $'\x15termgate --backend \t'
zpty -r z out '*kubernetes*' && print "backend ok"
zpty -w -n z $'\x15termgate completion \t'
zpty -r z out '*fish*' && print "completion ok"
zpty -d z
`
	if err := os.WriteFile(filepath.Join(dir, ".zshrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	// compinit and three completions take about a second; 60 s leaves
	// room for a CI machine running every package's tests at once (20 s
	// once ran out there).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zsh, "-f", "-c", drive)
	// TERM=dumb: no escape sequences between the characters matched.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TG=" + tg, "DIR=" + dir, "HOME=" + dir, "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "idle ok\nbackend ok\ncompletion ok\n" {
		t.Errorf("zsh completion: %v (a timeout: zsh never showed what was expected)\n%s", err, out)
	}
}

// TestCLIManPage: --help-man is a man page of every flag that groff reads
// without a warning.
func TestCLIManPage(t *testing.T) {
	out, errOut, code := runTermgate(t, nil, "--help-man")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, ".TH TERMGATE 1 ") {
		t.Fatalf("--help-man: exit %d, stderr %q, %.80q", code, errOut, out)
	}
	newFlagSet(&options{}, &sizeFlags{}).VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !strings.Contains(out, `\fB\-\-`+roff(f.Name)+`\fR`) {
			t.Errorf("the man page lacks --%s", f.Name)
		}
	})
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("no groff to check the page with")
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z")
	cmd.Stdin = strings.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, msg)
	}
}

// TestCLIRunsFromConfigFile: the real gateway runs with what its config
// file says, under the flags and the environment: the file's backend is
// the one serving, its unusable http-addr is overridden by the flag
// gatewayproc passes, and its log-level error by TERMGATE_LOG_LEVEL=info
// (else the info line Start waits for would never come).
func TestCLIRunsFromConfigFile(t *testing.T) {
	cfg := writeConfig(t, `# a gateway for the test
backend: local
local-instances: [web1]
http-addr: "256.0.0.1:0"
log-level: error
`)
	g, err := gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin:      termgateBinary(t),
		StateDir: filepath.Join(t.TempDir(), "state"),
		Args:     []string{"--config", cfg},
		Env:      []string{"TERMGATE_LOG_LEVEL=info"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := g.Stop(10 * time.Second); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if log := g.Log.String(); !strings.Contains(log, `"backend":"local"`) {
		t.Errorf("the listening line names another backend than the file's local:\n%s", log)
	}
}
