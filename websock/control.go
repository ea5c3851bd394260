package websock

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/termgate/termgate/sessions"
)

// Control message types a client may send in a text frame.
const (
	ctlResize  = "resize"
	ctlReset   = "reset"
	ctlPinSize = "pin-size" // {"type":"pin-size","cols":N,"rows":M} or {"type":"pin-size","auto":true}
	ctlHand    = "raise-hand"
	ctlGrant   = "grant" // {"type":"grant","who":NAME}
)

// control is a parsed, valid client control message.
type control struct {
	Type string
	// Size is set for resize and pin-size (zero: auto, unpin).
	Size sessions.Size
	// Who is set for grant.
	Who string
}

// wireControl is what parseControl decodes; pointers tell absent fields
// from zeros.
type wireControl struct {
	Type *string `json:"type"`
	Cols *int    `json:"cols"`
	Rows *int    `json:"rows"`
	Auto bool    `json:"auto"`
	Who  *string `json:"who"`
}

// parseControl decodes and validates a control message. Its errors are
// written for the user: they go back to the client in an error event.
// Unknown fields are ignored, so clients may add some.
func parseControl(data []byte) (control, error) {
	var w wireControl
	if err := json.Unmarshal(data, &w); err != nil {
		return control{}, fmt.Errorf("malformed control message: %s", describeJSONError(err))
	}
	if w.Type == nil {
		return control{}, errors.New(`malformed control message: "type" is missing`)
	}
	switch *w.Type {
	case ctlReset:
		return control{Type: ctlReset}, nil
	case ctlResize:
		if w.Cols == nil || w.Rows == nil {
			return control{}, errors.New(`resize needs "cols" and "rows"`)
		}
		size := sessions.Size{Cols: *w.Cols, Rows: *w.Rows}
		if !size.Valid() {
			return control{}, sizeError(size)
		}
		return control{Type: ctlResize, Size: size}, nil
	case ctlPinSize:
		if w.Auto {
			return control{Type: ctlPinSize}, nil
		}
		if w.Cols == nil || w.Rows == nil {
			return control{}, errors.New(`pin-size needs "cols" and "rows", or "auto": true`)
		}
		size := sessions.Size{Cols: *w.Cols, Rows: *w.Rows}
		if !size.Valid() {
			return control{}, sizeError(size)
		}
		return control{Type: ctlPinSize, Size: size}, nil
	case ctlHand:
		return control{Type: ctlHand}, nil
	case ctlGrant:
		if w.Who == nil || *w.Who == "" || len(*w.Who) > 256 {
			return control{}, errors.New(`grant needs "who": the name of an attached observer`)
		}
		return control{Type: ctlGrant, Who: *w.Who}, nil
	default:
		return control{}, fmt.Errorf("unknown control message type %q (known: resize, reset, pin-size, raise-hand, grant)", truncateRunes(*w.Type, 32))
	}
}

// sizeError is the message for a window size outside 1..MaxDim.
func sizeError(size sessions.Size) error {
	return fmt.Errorf("window size %dx%d is out of range: columns and rows must be 1..%d", size.Cols, size.Rows, sessions.MaxDim)
}

// describeJSONError shortens encoding/json's errors to what the user can act
// on, without echoing their input back at length.
func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("%q must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("a JSON object is expected, not a JSON %s", typ.Value)
	default:
		return "invalid JSON"
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int":
		return "an integer"
	case "string":
		return "a string"
	default:
		return goKind
	}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
