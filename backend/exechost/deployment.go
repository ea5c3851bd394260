package exechost

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"

	"github.com/termgate/termgate/sessions"
)

// Deployments on one engine stay apart (CONTRACT.md, "Durable sessions"
// item 7): a Host adopts, lists, resets and ends only the holders its own
// deployment started. Every holder gets a key derived from the
// deployment's secret (Config.HolderSecret, from the host key: replicas
// sharing it derive the same) and the instance's ID, handed over on the
// start exec's stdin; the holder and the gateway prove to each other that
// they have it at every connection (holder/proof.go). A holder that cannot
// is another deployment's: left alone, and the session is held in another
// directory (or is an ordinary one).
//
// The key is per instance so that root in one instance, who can read its
// holder's memory, learns that instance's key only: nothing about the
// secret, or any other instance's holder.

// ErrForeign is wrapped (with sessions.ErrNotHeld) by the errors for a
// holder that another deployment started: it is not adopted, not counted,
// never reset nor ended.
var ErrForeign = errors.New("holder started by another deployment; leaving it alone")

// InstanceKey is the key of the holders a deployment with secret starts in
// the instance with ID id (holder.KeyLen bytes).
func InstanceKey(secret []byte, id string) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("instance\x00" + id))
	return mac.Sum(nil)
}

// key is the key of this deployment's holders in inst.
func (c *heldConfig) key(inst sessions.Instance) []byte { return InstanceKey(c.secret, inst.ID) }

// foreignHolder notes a holder of another deployment in inst's dir, and
// says so in the log the first time.
func (h *Host) foreignHolder(inst sessions.Instance, dir string) {
	if h.knownForeign(inst, dir) {
		return
	}
	h.held.set(&h.held.foreign, inst.ID+"\x00"+dir, dir)
	h.log.Info(h.name+": holder started by another deployment; leaving it alone", "instance", inst.Name, "dir", dir)
}

// ownHolder forgets a foreign mark on inst's dir: the holder there now is
// this deployment's.
func (h *Host) ownHolder(inst sessions.Instance, dir string) {
	if h.knownForeign(inst, dir) {
		h.held.set(&h.held.foreign, inst.ID+"\x00"+dir, "")
	}
}

// foreignLast orders dirs so that those last seen holding another
// deployment's holder come last: an Adopt then reaches this deployment's
// holder first.
func (h *Host) foreignLast(inst sessions.Instance, dirs []string) []string {
	var own, foreign []string
	for _, d := range dirs {
		if h.knownForeign(inst, d) {
			foreign = append(foreign, d)
		} else {
			own = append(own, d)
		}
	}
	return append(own, foreign...)
}

// knownForeign says whether the holder in inst's dir was another
// deployment's when last met.
func (h *Host) knownForeign(inst sessions.Instance, dir string) bool {
	return h.held.get(&h.held.foreign, inst.ID+"\x00"+dir) != ""
}
