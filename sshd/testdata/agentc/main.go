// Command agentc is a tiny agent client for the agent forwarding tests,
// copied into a busybox container (which has no ssh-add): it talks to
// $SSH_AUTH_SOCK with x/crypto's agent client and prints one line.
//
//	agentc list   agent-keys: FP... (SHA256 fingerprints), or agent-error: WHY
//	agentc sign   agent-signed: FP (a signature by the first key), or agent-error: WHY
package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

func main() {
	if len(os.Args) != 2 {
		fail("usage: agentc list|sign")
	}
	c, err := net.DialTimeout("unix", os.Getenv("SSH_AUTH_SOCK"), 5*time.Second)
	if err != nil {
		fail("no socket: " + err.Error())
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	a := agent.NewClient(c)
	keys, err := a.List()
	if err != nil {
		fail("no agent: " + err.Error())
	}
	var fps []string
	for _, k := range keys {
		fps = append(fps, gossh.FingerprintSHA256(k))
	}
	switch os.Args[1] {
	case "list":
		fmt.Printf("agent-keys: %s.\n", strings.Join(fps, " "))
	case "sign":
		if len(keys) == 0 {
			fail("no keys")
		}
		sig, err := a.Sign(keys[0], []byte("termgate"))
		if err != nil {
			fail("sign: " + err.Error())
		}
		if err := keys[0].Verify([]byte("termgate"), sig); err != nil {
			fail("bad signature: " + err.Error())
		}
		fmt.Printf("agent-signed: %s.\n", fps[0])
	default:
		fail("usage: agentc list|sign")
	}
}

func fail(why string) {
	fmt.Printf("agent-error: %s.\n", why)
	os.Exit(2)
}
