package kubernetes

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// TestRunCommand: a one-off command in a pod: stdout and stderr apart
// (stderr streamed to the sink, whole), stdin to its EOF, the exit code;
// Close ends the command's jobs and only them.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{})
	pod := runPod(t, nil)
	inst, err := b.Lookup(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var errOut bytes.Buffer
	big := strings.Repeat("e", 10<<10) // more than the 4 KiB Stderr keeps
	p, err := b.Run(ctx, inst, remote.Command{Line: `cat; printf ` + big + ` >&2; echo $LANG; exit 5`, Env: []string{"LANG=C.UTF-8"}, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p, "in\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(p)
	if err != nil || string(out) != "in\nC.UTF-8\n" {
		t.Fatalf("stdout %q, %v", out, err)
	}
	if e, err := p.Wait(ctx); err != nil || e.Code != 5 {
		t.Fatalf("Wait = %+v, %v; want code 5", e, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if errOut.String() != big {
		t.Fatalf("stderr: %d bytes, want %d", errOut.Len(), len(big))
	}

	other := startShell(t, b, pod, sessions.StartSpec{})
	other.send("sleep 4322 & echo other-$((1+1))")
	other.expect("other-2")
	p, err = b.Run(ctx, inst, remote.Command{Line: `sleep 1236 & setsid sleep 1237 & echo started; wait`})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := p.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "started") {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ps := strings.Join(markedProcesses(t, pod), "\n")
	if strings.Contains(ps, "sleep 1236") || strings.Contains(ps, "sleep 1237") {
		t.Errorf("the command's jobs live on:\n%s", ps)
	}
	if !strings.Contains(ps, "sleep 4322") {
		t.Errorf("the session's job was killed too:\n%s", ps)
	}
}
