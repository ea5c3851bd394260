package exechost

import (
	"strings"
	"testing"
)

// What a holder prints when a container at its pid limit lets it start
// but not create its threads (seen with docker run --pids-limit).
const pidLimitCrash = `runtime: failed to create new OS thread (have 3 already; errno=11)
runtime: may need to increase max user processes (ulimit -u)
fatal error: newosproc

runtime stack:
runtime.throw({0x5b6d8a?, 0x7ffd97c6d0a8?})
	runtime/panic.go:1229 +0x48 fp=0x7ffd97c6d080 sp=0x7ffd97c6d050 pc=0x4828e8
runtime.newosproc(0xef1d5df4808)
	runtime/os_linux.go:199 +0x165 fp=0x7ffd97c6d0f0 sp=0x7ffd97c6d080 pc=0x448525

goroutine 1 gp=0xef1d5c021e0 m=nil [runnable, locked to thread]:
runtime.main()
	runtime/proc.go:147 +0x65 fp=0xef1d5c3e7e0 sp=0xef1d5c3e7b8 pc=0x44e545
` // and several KB more

// A holder's Go crash is one line with the reason (issue 20, D7), not its
// stack; other failures keep what the holder said, bounded.
func TestHolderCrashIsOneLine(t *testing.T) {
	_, err := parseServe(execResult{Stderr: pidLimitCrash + strings.Repeat("runtime.x()\n", 500), Code: 2}, "/tmp/.termgate/holder.sock")
	if err == nil {
		t.Fatal("a crash taken for a start")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || !strings.Contains(msg, "process limit") {
		t.Errorf("crash reported as %q, want one line naming the process limit", msg)
	}
	_, err = parseServe(execResult{Stderr: "fatal error: something else\n\ngoroutine 1 [running]:\nmain.main()\n", Code: 2}, "/tmp/.termgate/holder.sock")
	if err == nil || strings.Contains(err.Error(), "goroutine") || !strings.Contains(err.Error(), "crashed: fatal error: something else") {
		t.Errorf("another crash reported as %v, want its fatal error line only", err)
	}
	_, err = parseServe(execResult{Stderr: "termgate-holder: the holder daemon: boom", Code: 1}, "/tmp/.termgate/holder.sock")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("an ordinary failure reported as %v, want what the holder said", err)
	}
}
