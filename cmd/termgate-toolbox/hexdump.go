package main

import (
	"context"
	"encoding/hex"
	"io"
)

// hexdumpTool: hexdump -C and xxd alike print the canonical hex+ASCII
// form (hex.Dumper's), whatever options they are given.
func hexdumpTool(ctx context.Context, tio toolIO, args []string) error {
	var files []string
	for _, a := range args {
		if len(a) == 0 || a[0] != '-' || a == "-" {
			files = append(files, a)
		}
	}
	d := hex.Dumper(tio.out)
	err := tio.eachInput("hexdump", files, func(_ string, r io.Reader) error {
		_, err := io.Copy(d, ctxReader{ctx, r})
		return err
	})
	_ = d.Close()
	return err
}

// ctxReader ends a long read (a device, a pipe) once ^C cancelled ctx.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
