package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// wgetTool fetches an http:// URL from inside the instance (its network
// namespace: 127.0.0.1 is the service's loopback): wget [-q] [-O FILE|-]
// URL, and curl URL (to stdout). HTTP/1.0 over a plain connection, no
// TLS and no redirects: a probe of the service, not a browser. A status
// other than 2xx is an error (exit status 8, as wget's).
func wgetTool(ctx context.Context, tio toolIO, args []string) error {
	return fetch(ctx, tio, args, false)
}

func curlTool(ctx context.Context, tio toolIO, args []string) error {
	return fetch(ctx, tio, args, true)
}

func fetch(ctx context.Context, tio toolIO, args []string, toStdout bool) error {
	var out, rawURL string
	quiet := toStdout
	if toStdout {
		out = "-"
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-O" || a == "-o":
			if i+1 >= len(args) {
				return errors.New("-O needs a file name")
			}
			out, i = args[i+1], i+1
		case a == "-q" || a == "-s" || a == "-sS":
			quiet = true
		case strings.HasPrefix(a, "-"):
			// other options (-f, -L, -v...) are taken as given
		default:
			rawURL = a
		}
	}
	if rawURL == "" {
		return errors.New("no URL (use wget [-q] [-O FILE|-] http://HOST:PORT/PATH)")
	}
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return fmt.Errorf("%s: only http:// URLs (no TLS in the toolbox)", rawURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	target := u.RequestURI()
	fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: termgate-toolbox\r\nAccept: */*\r\nConnection: close\r\n\r\n", target, u.Host)
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("no HTTP response: %w", err)
	}
	status = strings.TrimSpace(status)
	for { // the headers
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading the response headers: %w", err)
		}
		if strings.TrimSpace(line) == "" {
			break
		}
	}
	if !quiet {
		fmt.Fprintf(tio.err, "%s: %s\n", rawURL, status)
	}
	var w io.Writer = tio.out
	if out == "" {
		out = path.Base(u.Path)
		if out == "/" || out == "." || out == "" {
			out = "index.html"
		}
	}
	if out != "-" {
		name := out
		if !filepath.IsAbs(name) {
			name = filepath.Join(tio.dir, name)
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if _, err := io.Copy(w, br); err != nil && ctx.Err() == nil {
		return err
	}
	if f := strings.Fields(status); len(f) < 2 || !strings.HasPrefix(f[1], "2") {
		fmt.Fprintf(tio.err, "%s: %s\n", rawURL, status)
		return interp.ExitStatus(8)
	}
	return nil
}
