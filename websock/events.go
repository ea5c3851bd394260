package websock

import (
	"encoding/json"

	"github.com/gorilla/websocket"
)

// Server → client events, sent as text frames.

type attachedEvent struct {
	Type     string `json:"type"` // "attached"
	Instance string `json:"instance"`
	Session  string `json:"session"`
	New      bool   `json:"new"`
	Offset   int64  `json:"offset"`
	Gap      bool   `json:"gap"`
	// Replay is how many bytes of replay precede live output (an addition
	// to the contract's fields): resume with since = offset + received - replay.
	Replay int `json:"replay"`
	// ReadOnly says the token is read-only (an addition to the contract's
	// fields): the page shows "read-only" and no Reset button.
	ReadOnly bool `json:"read_only"`
	// Cols and Rows are the shell's window size (an addition): a page
	// whose window is larger shows the session at this size.
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// sizeEvent: the shell's window size changed other than by this client's
// own resize (an addition to the contract's events; see
// sessions.Resized).
type sizeEvent struct {
	Type   string `json:"type"` // "size"
	Cols   int    `json:"cols"`
	Rows   int    `json:"rows"`
	Pinned bool   `json:"pinned"`
}

type resetEvent struct {
	Type    string `json:"type"` // "reset"
	Session string `json:"session"`
	// Offset is the number of the first byte after the new session's
	// replay (an addition to the contract's fields, for resuming).
	Offset int64 `json:"offset"`
	Replay int   `json:"replay"`
}

// skippedEvent: the client fell too far behind the output and was
// brought forward (session semantics 8); the current screen follows.
type skippedEvent struct {
	Type   string `json:"type"` // "skipped"
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	// Replay is how many bytes of redraw follow before the output from
	// offset on (an addition to the contract's fields, for resuming:
	// since = offset + received - replay, as after attached).
	Replay int `json:"replay"`
}

type exitEvent struct {
	Type string `json:"type"` // "exit"
	Code int    `json:"code"`
}

type errorEvent struct {
	Type    string `json:"type"` // "error"
	Message string `json:"message"`
}

// frame is one message for the writer.
type frame struct {
	typ  int // websocket.TextMessage or websocket.BinaryMessage
	data []byte
}

func eventFrame(v any) frame {
	b, err := json.Marshal(v)
	if err != nil { // unreachable: the event types above always marshal
		b = []byte(`{"type":"error","message":"internal error"}`)
	}
	return frame{typ: websocket.TextMessage, data: b}
}

func errorFrame(msg string) *frame {
	f := eventFrame(errorEvent{Type: "error", Message: msg})
	return &f
}
