package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The flag value types. Each checks its value when it is set, so that a
// bad value is refused where it was written (the command line, the
// environment variable, or the config file's line) and not later, where
// only the flag's name is known. Their errors are predicates about the
// value ("is not a duration; use one such as 30m"): the caller puts the
// source and the value in front.
//
// Type() is what --help, the man page and the completions show as the
// value's name unless the usage string names it in back quotes (pflag's
// convention, pflag.UnquoteUsage); "list" marks the values a config file
// may also give as a YAML sequence.

// textValue is a string, optionally checked.
type textValue struct {
	p     *string
	typ   string
	check func(string) error // nil: any string
}

func newText(p *string, def, typ string, check func(string) error) *textValue {
	*p = def
	return &textValue{p: p, typ: typ, check: check}
}

func (v *textValue) String() string { return *v.p }
func (v *textValue) Type() string   { return v.typ }
func (v *textValue) Set(s string) error {
	if v.check != nil {
		if err := v.check(s); err != nil {
			return err
		}
	}
	*v.p = s
	return nil
}

// oneOf checks that a value is one of choices; the choices are also what
// the shell completions offer (flagChoices).
func oneOf(what, hint string, choices ...string) func(string) error {
	return func(s string) error {
		for _, c := range choices {
			if s == c {
				return nil
			}
		}
		return fmt.Errorf("is not %s: use %s", what, hint)
	}
}

// listValue is a comma-separated list; every Set replaces the list, so a
// later source (environment over file, flag over environment) wins whole.
type listValue struct{ p *[]string }

func (v *listValue) String() string     { return strings.Join(*v.p, ",") }
func (v *listValue) Type() string       { return "list" }
func (v *listValue) Set(s string) error { *v.p = splitList(s); return nil }

// durationValue is a Go duration; positive refuses 0 and below.
type durationValue struct {
	p        *time.Duration
	positive bool
}

func newDuration(p *time.Duration, def time.Duration, positive bool) *durationValue {
	*p = def
	return &durationValue{p: p, positive: positive}
}

func (v *durationValue) String() string { return formatDuration(*v.p) }
func (v *durationValue) Type() string   { return "duration" }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil && isNumber(s):
		n := strings.TrimSpace(s)
		return fmt.Errorf("is not a duration: it needs a unit; use %ss, %sm or a duration such as 30m", n, n)
	case err != nil:
		return errors.New("is not a duration; use one such as 30m (or 90s, 1h30m)")
	case v.positive && d <= 0:
		return errors.New("must be positive; use a duration such as 30m")
	case d < 0:
		return errors.New("must not be negative; use 0 or a duration such as 30m")
	}
	*v.p = d
	return nil
}

// formatDuration writes 30m and 9s, not Go's 30m0s and 9s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// boolValue is true or false (what strconv.ParseBool reads); a bare
// --flag means true.
type boolValue struct{ p *bool }

func newBool(p *bool, def bool) *boolValue { *p = def; return &boolValue{p: p} }

func (v *boolValue) String() string { return strconv.FormatBool(*v.p) }
func (v *boolValue) Type() string   { return "bool" }
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("is not true or false")
	}
	*v.p = b
	return nil
}

// rateValue is a number of requests per second: 0 (off) or positive.
type rateValue struct{ p *float64 }

func newRate(p *float64, def float64) *rateValue { *p = def; return &rateValue{p: p} }

func (v *rateValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *rateValue) Type() string   { return "number" }
func (v *rateValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 {
		return errors.New("must be 0 (off) or a positive number of requests per second, such as 20")
	}
	*v.p = f
	return nil
}

// countValue is a positive whole number (a cap).
type countValue struct{ p *int }

func newCount(p *int, def int) *countValue { *p = def; return &countValue{p: p} }

func (v *countValue) String() string { return strconv.Itoa(*v.p) }
func (v *countValue) Type() string   { return "number" }
func (v *countValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return errors.New("must be a positive whole number, such as 8")
	}
	*v.p = n
	return nil
}
