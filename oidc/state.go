package oidc

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// The shared sign-in state (contract, "Single sign-on", "Everywhere at
// once"): the SSH keys browsers approved and the browser sign-ins that
// logged out. Each is one small named record in Records: a file in a
// directory (STATE_DIR/signins, DirRecords) or a key of a Kubernetes
// Secret (backend/kubernetes), authenticated with an HMAC-SHA256 over the
// record's kind, its name and its JSON, keyed with a secret every replica
// of the deployment derives from its host key (StateKey). Every gateway
// that shares the records reads them again once a second (PollInterval),
// so a logout or a forgotten key on one holds on all within about a
// second, and a restarted gateway finds everything as it was. A record
// whose MAC does not verify (forged, or from another deployment), that
// does not parse, or whose expiry passed grants nothing, and expired
// records are deleted by whichever gateway sees them first.

// PollInterval is how often a Store reads its records again.
const PollInterval = time.Second

// opTimeout bounds one read or write of the records (a Secret's get and
// update retried on conflicts included).
const opTimeout = 10 * time.Second

// maxRecord bounds what a record file may hold (a real one is < 4 KiB).
const maxRecord = 16 << 10

// stateLabel separates the state's MAC key from every other use of the
// deployment's secret.
const stateLabel = "termgate signin state v1"

// StateKey derives the state's MAC key from the deployment's secret
// (keys.HolderSecret: the same on every replica that shares the host key).
func StateKey(deploymentSecret []byte) []byte {
	m := hmac.New(sha256.New, deploymentSecret)
	m.Write([]byte(stateLabel))
	return m.Sum(nil)
}

// KeyRecord is one SSH key a browser approved: it stands for the identity
// until Expires, unless the sign-in that approved it logs out first.
type KeyRecord struct {
	// ID is random: a forgotten key leaves a tombstone under it, so a
	// copy of its file put back grants nothing.
	ID          string    `json:"id"`
	Fingerprint string    `json:"fp"`
	Issuer      string    `json:"iss"`
	Subject     string    `json:"sub"`
	Email       string    `json:"email"`
	Verified    bool      `json:"email_verified"`
	Groups      []string  `json:"groups"`
	SigninID    string    `json:"signin"` // the browser sign-in that approved it
	Remote      string    `json:"remote"` // the SSH client's address then
	Approved    time.Time `json:"approved"`
	Expires     time.Time `json:"exp"`
}

// record kinds, also the first letter of their file names.
const (
	kindKey    = "k" // a KeyRecord
	kindLogout = "r" // a browser sign-in that logged out
	kindForgot = "f" // a forgotten KeyRecord's ID
)

// envelope is what a file holds besides its MAC.
type envelope struct {
	Kind    string          `json:"kind"`
	Name    string          `json:"name"` // the file's own name
	Expires time.Time       `json:"exp"`
	Data    json.RawMessage `json:"data,omitempty"`
}

var (
	errRecordMalformed = errors.New("malformed record")
	errRecordMAC       = errors.New("record not signed with this deployment's key")
	errRecordName      = errors.New("record under another file's name")
)

// sealRecord is a file's content for e.
func sealRecord(key []byte, e envelope) []byte {
	b, _ := json.Marshal(e) // envelopes always marshal
	m := hmac.New(sha256.New, key)
	m.Write(b)
	out := base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)) + "\n"
	return []byte(out)
}

// openRecord checks a file's MAC and that it names itself name, then
// decodes it. It reads untrusted bytes (FuzzOpenRecord).
func openRecord(key []byte, name string, data []byte) (envelope, error) {
	if len(data) > maxRecord {
		return envelope{}, errRecordMalformed
	}
	p64, m64, ok := bytes.Cut(bytes.TrimSpace(data), []byte("."))
	if !ok || len(m64) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return envelope{}, errRecordMalformed
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(string(p64))
	mac, err2 := base64.RawURLEncoding.DecodeString(string(m64))
	if err1 != nil || err2 != nil {
		return envelope{}, errRecordMalformed
	}
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return envelope{}, errRecordMAC
	}
	var e envelope
	if err := json.Unmarshal(payload, &e); err != nil {
		return envelope{}, errRecordMalformed
	}
	if e.Name != name || !strings.HasPrefix(name, e.Kind+"-") {
		return envelope{}, errRecordName
	}
	return e, nil
}

// keyFile names the file of the key with fingerprint fp (a hash: a
// fingerprint holds '/').
func keyFile(fp string) string {
	h := sha256.Sum256([]byte(fp))
	return kindKey + "-" + hex.EncodeToString(h[:16])
}

// idFile names a logout's or a tombstone's file; ids are ours (random,
// URL-safe base64), anything else is hashed.
func idFile(kind, id string) string {
	h := sha256.Sum256([]byte(id))
	return kind + "-" + hex.EncodeToString(h[:16])
}

// Store is the shared sign-in state, read from and written to its
// Records.
type Store struct {
	rec Records // nil: memory only (tests, and a gateway without a state directory)
	key []byte
	max int
	log *slog.Logger
	ctx context.Context // cancelled by Close: no read or write outlives the Store
	end context.CancelFunc

	mu        sync.Mutex
	keys      map[string]KeyRecord // by fingerprint
	loggedOut map[string]time.Time // sign-in ID → its expiry
	forgot    map[string]time.Time // KeyRecord.ID → its expiry
	files     map[string]fileSeen  // what the last poll read, by record name
	version   string               // Records' version the state was last rebuilt from
	changed   bool                 // something was taken away since the last poll: recheck
	gen       uint64               // local changes: a poll that read the records before one does not rebuild from them
	warned    map[string]bool      // records already logged as refused
	failing   bool                 // the last load failed (logged once, not every second)

	onChange func()
	stop     chan struct{}
	done     chan struct{}
}

// fileSeen is a record as read, and opened: a record whose bytes did not
// change is not opened (its MAC checked) again.
type fileSeen struct {
	raw []byte
	env envelope
	ok  bool
}

// StoreConfig configures a Store.
type StoreConfig struct {
	// Records holds the records; nil: DirRecords on Dir.
	Records Records
	// Dir holds the records (created 0700 if missing) when Records is
	// nil; empty too keeps them in memory only.
	Dir string
	// Key authenticates them (StateKey).
	Key []byte
	// MaxKeys bounds the keys remembered (default 100000).
	MaxKeys int
	// OnChange runs (from the poller, never under a lock) after a poll
	// found something taken away: a logout, a forgotten or expired key;
	// the gateway rechecks its attached clients there.
	OnChange func()
	Logger   *slog.Logger
}

// NewStore opens the state in cfg.Records (or cfg.Dir) and reads it once;
// Start polls it.
func NewStore(cfg StoreConfig) (*Store, error) {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Records == nil && cfg.Dir != "" {
		d, err := NewDirRecords(cfg.Dir)
		if err != nil {
			return nil, err
		}
		cfg.Records = d
	}
	if cfg.Records != nil && len(cfg.Key) < 16 {
		return nil, errors.New("sign-in state: no key to authenticate its records")
	}
	s := &Store{rec: cfg.Records, key: cfg.Key, max: cfg.MaxKeys, log: cfg.Logger, onChange: cfg.OnChange,
		keys: map[string]KeyRecord{}, loggedOut: map[string]time.Time{}, forgot: map[string]time.Time{},
		files: map[string]fileSeen{}, warned: map[string]bool{}}
	s.ctx, s.end = context.WithCancel(context.Background())
	if s.rec != nil {
		if _, _, err := s.load(); err != nil {
			s.end()
			return nil, fmt.Errorf("sign-in state: %w", err)
		}
		s.poll(time.Now())
	}
	return s, nil
}

// load reads the records, within opTimeout.
func (s *Store) load() (map[string][]byte, string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
	defer cancel()
	return s.rec.Load(ctx)
}

// Start polls the records every PollInterval until Close.
func (s *Store) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(PollInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				if s.poll(now) && s.onChange != nil {
					s.onChange()
				}
			}
		}
	}()
}

// Close stops the poller and waits for it, and ends any read or write of
// the records under way.
func (s *Store) Close() {
	s.end()
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}

// Poll reads the records now (tests; the poller does it every second)
// and reports whether something was taken away since the last poll.
func (s *Store) Poll() bool { return s.poll(time.Now()) }

// poll reads what changed in the records and rebuilds the state from
// every valid one; it deletes expired records. The reading is done
// without the lock.
func (s *Store) poll(now time.Time) bool {
	for range 3 { // again if a local change came in meanwhile (rarely)
		if s.pollOnce(now) {
			break
		}
	}
	s.mu.Lock()
	var expired []string
	for name, f := range s.files {
		if f.ok && !now.Before(f.env.Expires) {
			expired = append(expired, name)
		}
	}
	for fp, k := range s.keys {
		if !s.validLocked(k, now) {
			delete(s.keys, fp)
			s.changed = true
		}
	}
	for id, exp := range s.loggedOut {
		if !now.Before(exp) {
			delete(s.loggedOut, id)
		}
	}
	for id, exp := range s.forgot {
		if !now.Before(exp) {
			delete(s.forgot, id)
		}
	}
	changed := s.changed
	s.changed = false
	s.mu.Unlock()
	s.remove(expired...)
	return changed
}

// pollOnce reads the records and rebuilds the state from them; false if a
// local change came in meanwhile (nothing rebuilt). Records at the version
// the state was last rebuilt from are not gone through again: expiry is
// poll's, and every local change is written to the records, which changes
// their version.
func (s *Store) pollOnce(now time.Time) bool {
	if s.rec == nil {
		return true
	}
	s.mu.Lock()
	gen, prev, seen := s.gen, s.files, s.version
	s.mu.Unlock()
	recs, version, err := s.load()
	s.mu.Lock()
	was := s.failing
	s.failing = err != nil
	s.mu.Unlock()
	switch {
	case err != nil && !was && s.ctx.Err() == nil:
		s.log.Warn("sign-in state not read: logouts and keys from other gateways wait until it is (retried every second)", "records", s.rec.Where(""), "err", err)
	case err == nil && was:
		s.log.Info("sign-in state read again", "records", s.rec.Where(""))
	}
	if err != nil {
		return true
	}
	if version != "" && version == seen {
		return true
	}
	next := make(map[string]fileSeen, len(recs))
	for name, data := range recs {
		if p, ok := prev[name]; ok && bytes.Equal(p.raw, data) {
			next[name] = p
			continue
		}
		next[name] = s.open(name, data)
	}
	keys, out, forgot := map[string]KeyRecord{}, map[string]time.Time{}, map[string]time.Time{}
	for name, f := range next {
		if !f.ok || !now.Before(f.env.Expires) {
			continue
		}
		switch f.env.Kind {
		case kindKey:
			var k KeyRecord
			if json.Unmarshal(f.env.Data, &k) != nil || keyFile(k.Fingerprint) != name || !k.Expires.Equal(f.env.Expires) {
				continue
			}
			keys[k.Fingerprint] = k
		case kindLogout:
			var id string
			if json.Unmarshal(f.env.Data, &id) == nil && idFile(kindLogout, id) == name {
				out[id] = f.env.Expires
			}
		case kindForgot:
			var id string
			if json.Unmarshal(f.env.Data, &id) == nil && idFile(kindForgot, id) == name {
				forgot[id] = f.env.Expires
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = next
	if s.gen != gen {
		return false
	}
	// A tombstone this store made is kept although its record is not
	// written yet (Forget and Logout change memory first, then write):
	// otherwise a poll between the two would bring the key back for a
	// poll's length, and a page rendered then would list it. Tombstones
	// only go when they expire.
	keepTombstones(forgot, s.forgot, now)
	keepTombstones(out, s.loggedOut, now)
	for fp, k := range keys {
		_, gone := forgot[k.ID]
		if _, loggedOut := out[k.SigninID]; gone || loggedOut {
			delete(keys, fp)
		}
	}
	for fp := range s.keys {
		if _, still := keys[fp]; !still {
			s.changed = true
		}
	}
	for id := range out {
		if _, had := s.loggedOut[id]; !had {
			s.changed = true
		}
	}
	s.keys, s.loggedOut, s.forgot = keys, out, forgot
	s.version = version
	return true
}

// keepTombstones adds to into the unexpired tombstones of from it lacks.
func keepTombstones(into, from map[string]time.Time, now time.Time) {
	for id, exp := range from {
		if _, ok := into[id]; !ok && now.Before(exp) {
			into[id] = exp
		}
	}
}

// open checks one record.
func (s *Store) open(name string, data []byte) fileSeen {
	f := fileSeen{raw: data}
	e, err := openRecord(s.key, name, data)
	if err != nil {
		s.refused(name, err)
		return f
	}
	f.env, f.ok = e, true
	return f
}

func (s *Store) refused(name string, err error) {
	s.mu.Lock()
	seen := s.warned[name]
	s.warned[name] = true
	s.mu.Unlock()
	if !seen {
		s.log.Warn("sign-in state: a record is refused and grants nothing", "record", s.rec.Where(name), "err", err)
	}
}

// validLocked: k stands for its identity at now.
func (s *Store) validLocked(k KeyRecord, now time.Time) bool {
	if !now.Before(k.Expires) {
		return false
	}
	if _, out := s.loggedOut[k.SigninID]; out {
		return false
	}
	_, gone := s.forgot[k.ID]
	return !gone
}

// write seals a record and puts it in place.
func (s *Store) write(e envelope) error {
	if s.rec == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
	defer cancel()
	return s.rec.Put(ctx, e.Name, sealRecord(s.key, e))
}

// remove deletes records. One left behind (the store unreachable) grants
// nothing: an expired one is deleted again at a later poll, a forgotten or
// logged-out key is overridden by its tombstone or its logout.
func (s *Store) remove(names ...string) {
	if s.rec == nil || len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
	defer cancel()
	if err := s.rec.Delete(ctx, names...); err != nil && s.ctx.Err() == nil {
		s.log.Warn("sign-in state: records not deleted", "records", len(names), "err", err)
	}
}

// ErrSignedOut refuses remembering a key for a sign-in that logged out
// (a logout that raced the approval).
var ErrSignedOut = errors.New("the browser sign-in that approved this logged out meanwhile: sign in again in the browser and run ssh again")

// Remember binds k.Fingerprint to k's identity, unless k's sign-in logged
// out. k.ID is set here.
func (s *Store) Remember(k KeyRecord) error {
	k.ID = NewPending().State
	k.Groups = slices.Clone(k.Groups)
	s.mu.Lock()
	if _, out := s.loggedOut[k.SigninID]; out {
		s.mu.Unlock()
		return ErrSignedOut
	}
	s.mu.Unlock()
	data, _ := json.Marshal(k)
	if err := s.write(envelope{Kind: kindKey, Name: keyFile(k.Fingerprint), Expires: k.Expires, Data: data}); err != nil {
		return err
	}
	s.mu.Lock()
	if _, out := s.loggedOut[k.SigninID]; out { // logged out while the file was written
		s.mu.Unlock()
		s.remove(keyFile(k.Fingerprint))
		return ErrSignedOut
	}
	var evict string
	if _, ok := s.keys[k.Fingerprint]; !ok && len(s.keys) >= s.max {
		for f, x := range s.keys {
			if evict == "" || x.Expires.Before(s.keys[evict].Expires) {
				evict = f
			}
		}
		delete(s.keys, evict)
	}
	s.keys[k.Fingerprint] = k
	s.gen++
	s.mu.Unlock()
	if evict != "" {
		s.remove(keyFile(evict))
	}
	return nil
}

// Lookup is the record of the key with fingerprint fp while it stands for
// its identity.
func (s *Store) Lookup(fp string, now time.Time) (KeyRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[fp]
	if !ok || !s.validLocked(k, now) {
		return KeyRecord{}, false
	}
	k.Groups = slices.Clone(k.Groups)
	return k, true
}

// KeysOf lists the keys remembered for the identity iss+sub, newest
// approval first.
func (s *Store) KeysOf(iss, sub string, now time.Time) []KeyRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []KeyRecord
	for _, k := range s.keys {
		if k.Issuer == iss && k.Subject == sub && s.validLocked(k, now) {
			k.Groups = slices.Clone(k.Groups)
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b KeyRecord) int { return b.Approved.Compare(a.Approved) })
	return out
}

// Forget drops the key fp; with iss non-empty only if it is that
// identity's (iss+sub). It reports whether it dropped one.
func (s *Store) Forget(fp, iss, sub string) (bool, error) {
	s.mu.Lock()
	k, ok := s.keys[fp]
	if !ok || (iss != "" && (k.Issuer != iss || k.Subject != sub)) {
		s.mu.Unlock()
		return false, nil
	}
	delete(s.keys, fp)
	s.forgot[k.ID] = k.Expires
	s.changed = true
	s.gen++
	s.mu.Unlock()
	data, _ := json.Marshal(k.ID)
	err := s.write(envelope{Kind: kindForgot, Name: idFile(kindForgot, k.ID), Expires: k.Expires, Data: data})
	s.remove(keyFile(fp))
	return true, err
}

// Logout records that the browser sign-in id logged out (until exp, its
// own expiry) and forgets the keys it approved.
func (s *Store) Logout(id string, exp time.Time) error {
	s.mu.Lock()
	s.loggedOut[id] = exp
	var drop []string
	for fp, k := range s.keys {
		if k.SigninID == id {
			delete(s.keys, fp)
			drop = append(drop, keyFile(fp))
		}
	}
	s.changed = true
	s.gen++
	s.mu.Unlock()
	data, _ := json.Marshal(id)
	err := s.write(envelope{Kind: kindLogout, Name: idFile(kindLogout, id), Expires: exp, Data: data})
	s.remove(drop...)
	return err
}

// LoggedOut reports whether the browser sign-in id logged out.
func (s *Store) LoggedOut(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.loggedOut[id]
	return ok
}

// TakeChanged reports (and forgets) whether something was taken away
// since the last call or poll: the memory-only store's callers recheck
// on it.
func (s *Store) TakeChanged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.changed
	s.changed = false
	return c
}
