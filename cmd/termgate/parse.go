package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// errHelp reports that --help (or --help-man) was asked for: main prints
// it and exits 0.
var errHelp = errors.New("help requested")

// notSettings are the flags that act rather than set something: neither
// the environment nor a config file gives them.
var notSettings = map[string]bool{"help": true, "help-man": true, "version": true}

// envName is the environment variable a flag also reads (CONTRACT.md
// "Build and run"): --idle-timeout reads TERMGATE_IDLE_TIMEOUT.
func envName(flag string) string {
	return "TERMGATE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// parseFlags reads the settings from args, then the environment (getenv),
// then the --config file (or TERMGATE_CONFIG), each source giving only
// what the ones before it left unset: a flag wins over the environment,
// which wins over the file. Every value in the file is checked even when
// a flag or variable overrides it, so a bad file never waits to break a
// later start.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o, sz := &options{}, sizeFlags{}
	fs := newFlagSet(o, &sz)
	if err := fs.Parse(args); err != nil {
		return nil, commandLineError(fs, err)
	}
	if o.help || o.helpMan {
		return o, errHelp
	}
	if o.version {
		return o, nil
	}
	if fs.NArg() > 0 {
		hint := ""
		if f := fs.Lookup(fs.Arg(0)); f != nil && !f.Hidden {
			hint = "; did you mean --" + f.Name + "?"
		}
		if _, err := strconv.ParseBool(fs.Arg(0)); err == nil {
			return nil, fmt.Errorf("unexpected argument %q: a switch takes true or false after an =, such as --durable=false", fs.Arg(0))
		}
		return nil, fmt.Errorf("unexpected argument %q: all settings are flags (--NAME VALUE, see --help), and the one subcommand is completion%s", fs.Arg(0), hint)
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCommandLine[f.Name] = true })
	var fromEnv []*pflag.Flag // in definition order, so errors are stable
	fs.VisitAll(func(f *pflag.Flag) {
		if !notSettings[f.Name] && !onCommandLine[f.Name] && getenv(envName(f.Name)) != "" {
			fromEnv = append(fromEnv, f)
		}
	})
	if err := applyConfigFile(fs, o, onCommandLine, getenv); err != nil {
		return nil, err
	}
	for _, f := range fromEnv {
		name, v := envName(f.Name), getenv(envName(f.Name))
		if err := fs.Set(f.Name, v); err != nil {
			return nil, fmt.Errorf("%s=%q %v", name, v, valueError(err))
		}
	}
	if err := settle(o, sz); err != nil {
		return nil, err
	}
	return o, nil
}

// valueError is the check's own predicate ("is not a duration; …")
// without pflag's wrapping.
func valueError(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) && iv.Unwrap() != nil {
		return iv.Unwrap()
	}
	return err
}

// commandLineError words pflag's errors as the fix: the flag that was
// probably meant, or the kind of value a flag takes.
func commandLineError(fs *pflag.FlagSet, err error) error {
	var (
		iv  *pflag.InvalidValueError
		ne  *pflag.NotExistError
		req *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &iv):
		return fmt.Errorf("--%s %q %v", iv.GetFlag().Name, iv.GetValue(), iv.Unwrap())
	case errors.As(err, &req):
		f := req.GetFlag()
		return fmt.Errorf("--%s needs a value: --%s %s", f.Name, f.Name, valueName(f))
	case errors.As(err, &ne) && len(ne.GetSpecifiedShortnames()) > 1:
		// -idle-timeout: Go's flag package took one dash; GNU style takes two.
		long, _, _ := strings.Cut(ne.GetSpecifiedShortnames(), "=")
		if fs.Lookup(long) != nil {
			return fmt.Errorf("unknown flag -%s: long flags take two dashes, --%s", long, long)
		}
		return fmt.Errorf("unknown flag -%s: long flags take two dashes%s", long, didYouMean(fs, long, "--"))
	case errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "":
		return fmt.Errorf("unknown flag -%s: the one short flag is -h (help)", ne.GetSpecifiedName())
	case errors.As(err, &ne):
		return fmt.Errorf("unknown flag --%s%s", ne.GetSpecifiedName(), didYouMean(fs, ne.GetSpecifiedName(), "--"))
	}
	return err
}

// didYouMean is "; did you mean --NAME?" for the flag closest to name
// (dashes: "--" on the command line, "" for a config file's key), or
// nothing when none is close.
func didYouMean(fs *pflag.FlagSet, name, dashes string) string {
	if c := closestFlag(fs, name); c != "" {
		return "; did you mean " + dashes + c + "?"
	}
	return ""
}

// closestFlag is the visible flag whose name name begins (when only one
// does), else the one fewest edits away when it is close enough to be a
// typo (at most a third of the name, and at least 2, edits), else "".
func closestFlag(fs *pflag.FlagSet, name string) string {
	// IDLE_TIMEOUT and TERMGATE_IDLE_TIMEOUT mean --idle-timeout too.
	name = strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")), "termgate-")
	var prefixed []string
	best, bestDist := "", max(2, len(name)/3)+1
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if name != "" && strings.HasPrefix(f.Name, name) {
			prefixed = append(prefixed, f.Name)
		}
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (flag names: short,
// ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// valueName is what --help writes after a flag: its type in capitals
// (DURATION, FILE, SIZE), nothing for a switch.
func valueName(f *pflag.Flag) string {
	if f.NoOptDefVal != "" {
		return ""
	}
	return strings.ToUpper(f.Value.Type())
}
