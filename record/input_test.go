package record

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

func inputOf(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == "i" {
			b.WriteString(ev.Data)
		}
	}
	return b.String()
}

// With Config.Input the recording has "i" events for what clients wrote,
// in order with the output (a character cut between writes joined, the
// caller's buffer copied); without it input is never written.
func TestInputIsRecordedOnlyWhenAsked(t *testing.T) {
	for _, withInput := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "rec")
		r, err := New(Config{Dir: dir, Input: withInput})
		if err != nil {
			t.Fatal(err)
		}
		obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "ab12", Size: sessions.Size{Cols: 80, Rows: 24}})
		in, ok := obs.(sessions.InputObserver)
		if !ok {
			t.Fatal("a Recording is not a sessions.InputObserver")
		}
		obs.Output([]byte("$ "))
		buf := []byte("echo caf\xc3")
		in.Input(buf)
		copy(buf, "XXXXXXXX") // the caller reuses its buffer
		in.Input([]byte("\xa9\r"))
		obs.Output([]byte("café\r\n$ "))
		obs.Close()
		closeRecorder(t, r)

		_, evs := readCast(t, filepath.Join(dir, "web1", "ab12.cast"))
		var kinds strings.Builder
		for _, ev := range evs {
			kinds.WriteString(ev.Type)
		}
		if !withInput {
			if got := inputOf(evs); got != "" || kinds.String() != "oo" {
				t.Fatalf("input recorded without Config.Input: %q (%s)", got, kinds.String())
			}
			continue
		}
		if got := inputOf(evs); got != "echo café\r" || kinds.String() != "oiio" {
			t.Fatalf("input %q, events %s; want \"echo café\\r\" and oiio", got, kinds.String())
		}
		if outputOf(evs) != "$ café\r\n$ " {
			t.Fatalf("output %q", outputOf(evs))
		}
	}
}
