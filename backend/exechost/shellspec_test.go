package exechost

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/termgate/termgate/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestForStart(t *testing.T) {
	sh, err := forStart("gw", "web1", sessions.StartSpec{SessionID: "s1", Term: "screen-256color", Size: sessions.Size{Cols: 100, Rows: 30}})
	if err != nil || sh != (shellSpec{marker: "gw.s1", term: "screen-256color", size: sessions.Size{Cols: 100, Rows: 30}}) {
		t.Errorf("forStart = %+v, %v", sh, err)
	}
	sh, err = forStart("", "web1", sessions.StartSpec{SessionID: "s1", Term: "$(id)"})
	if err != nil || sh != (shellSpec{marker: "s1", term: defaultTerm, size: sessions.DefaultSize}) {
		t.Errorf("forStart without gateway id, size or TERM = %+v, %v", sh, err)
	}
	sh, err = forStart("gw", "web1", sessions.StartSpec{SessionID: "s1", Agent: true})
	if err != nil || sh.agentSock != sessions.AgentSocket("s1") || sh.env()[1] != "SSH_AUTH_SOCK=/tmp/.termgate-agent-s1/agent.sock" {
		t.Errorf("forStart with an agent = %+v (env %q), %v", sh, sh.env(), err)
	}
	if _, err := forStart("gw", "web1", sessions.StartSpec{SessionID: "a.b"}); err == nil {
		t.Error("forStart accepted session id a.b")
	}
	if _, err := forStart("gw", "web1", sessions.StartSpec{SessionID: "s1", Size: sessions.Size{Cols: 0, Rows: 30}}); !errors.Is(err, sessions.ErrBadSize) {
		t.Errorf("forStart(0x30) = %v, want ErrBadSize", err)
	}
}

func TestTTYSize(t *testing.T) {
	if got, err := ttySize(sessions.Size{}); err != nil || got != sessions.DefaultSize {
		t.Errorf("ttySize(zero) = %v, %v, want the default size", got, err)
	}
	if got, err := ttySize(sessions.Size{Cols: 80, Rows: 24}); err != nil || got != (sessions.Size{Cols: 80, Rows: 24}) {
		t.Errorf("ttySize(80x24) = %v, %v", got, err)
	}
	if _, err := ttySize(sessions.Size{Cols: 5, Rows: 0}); !errors.Is(err, sessions.ErrBadSize) {
		t.Errorf("ttySize(5x0) = %v, want ErrBadSize", err)
	}
	if termOrDefault("") != defaultTerm || termOrDefault("xterm") != "xterm" {
		t.Error("termOrDefault")
	}
}
