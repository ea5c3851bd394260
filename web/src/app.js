// termgate's browser terminal: a sign-in form, the list of the instances the
// token may reach (with their sessions) and a field to open any other by
// name, and a full-window terminal at /t/NAME that stays attached to the
// instance's persistent session, with a tab for each of its sessions (a
// named one at /t/NAME+SESSION) and a "+" that opens a new one. The protocol is described
// in ../../websock/doc.go and the README ("HTTP and WebSocket").
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { parseCast, Player } from './player.js';
import { setupKeyBar } from './keybar.js';

const $ = (id) => document.getElementById(id);
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
// A named session's name (CONTRACT.md "Named sessions and logins"); a test
// keeps it equal to internal/names.SessionExpr.
const SESSION = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const isMac = /Mac|iPhone|iPad/.test(navigator.platform);

function show(view) {
  for (const id of ['signin', 'switch', 'picker', 'terminal', 'player']) $(id).hidden = id !== view;
}

// errorOf returns the message of an API error response ({"error": ...}).
async function errorOf(res) {
  try {
    return (await res.json()).error || `${res.status} ${res.statusText}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

// ---- sign-in ---------------------------------------------------------------

// login exchanges a token for the HttpOnly login cookie; it returns an error
// message, or '' on success.
async function login(token) {
  try {
    const res = await fetch('/api/login', { method: 'POST', body: new URLSearchParams({ token }) });
    return res.ok ? '' : await errorOf(res);
  } catch {
    return 'the gateway is unreachable';
  }
}

// whoami asks GET /api/whoami who the login cookie (or, given a token, that
// token) belongs to: {name, instances, via, read_only, same_login}. It returns that
// object, {error} when the credential is refused, or null when the gateway
// cannot be reached.
async function whoami(token) {
  const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  try {
    const res = await fetch('/api/whoami', { cache: 'no-store', headers });
    return res.ok ? await res.json() : { error: await errorOf(res), status: res.status };
  } catch {
    return null;
  }
}

// refusal asks the terminal route, without the upgrade, why an attach
// would be refused: the gateway runs the attach's checks and answers with
// the status and message a failed handshake hides from the page. '' when
// the attach would be accepted or the gateway cannot be reached.
async function refusal(path) {
  try {
    const res = await fetch(path, { cache: 'no-store' });
    if (res.ok || res.status === 400 && (await res.clone().text()).includes('would be accepted')) return '';
    return await errorOf(res);
  } catch {
    return '';
  }
}

// signedIn asks whether the cookie is still valid. A gateway that cannot be
// reached counts as signed in: the views retry.
async function signedIn() {
  const me = await whoami();
  return !me || me.status !== 401;
}

// limits describes a token's instances= patterns ('' when it has none).
function limits(me) {
  return me.instances && me.instances.length ? ` (instances ${me.instances.join(', ')})` : '';
}

// showIdentity shows, on every view, who the browser is signed in as: the
// token's name, and its instance patterns if it has any.
function showIdentity(me) {
  const name = me && me.name ? me.name : '?';
  for (const el of document.querySelectorAll('.identity-name')) el.textContent = name;
  for (const el of document.querySelectorAll('.identity-limits')) el.textContent = me ? limits(me) : '';
  window.termgateIdentity = me; // for the browser test
}

// askSwitch is shown when an address carries a token (a #token= or ?token=
// sign-in link) while the browser is already signed in: such a link from
// someone else would otherwise sign the user in as them without a sign
// (login CSRF), and what the user typed next would go to their instances.
// It resolves to true when the user chose to switch to the link's token,
// false to stay. A link of the current login changes nothing and asks
// nothing.
async function askSwitch(me, token) {
  const theirs = await whoami(token);
  if (theirs && !theirs.error && theirs.same_login) return false;
  show('switch');
  document.title = 'Switch identity? · termgate';
  showIdentity(me);
  const accept = $('switch-accept');
  if (!theirs || theirs.error) {
    $('switch-question').hidden = true;
    accept.hidden = true;
    $('switch-error').textContent = `The sign-in token in this address was refused: ${theirs ? theirs.error : 'the gateway is unreachable'}. You are still signed in as ${me.name}.`;
    $('switch-error').hidden = false;
  } else {
    $('switch-new').textContent = theirs.name;
    $('switch-new-limits').textContent = limits(theirs);
    $('switch-accept-name').textContent = theirs.name;
  }
  $('switch-keep').focus();
  return new Promise((resolve) => {
    $('switch-keep').addEventListener('click', () => resolve(false), { once: true });
    accept.addEventListener('click', () => resolve(true), { once: true });
  });
}

// expired shows the sign-in form after the login stopped working (it
// expired, its token was removed from the token file, the gateway's cookie
// key was replaced; a gateway restart alone keeps it), and drops the dead
// cookie, which can never work again, so that other tabs stop presenting
// it too.
function expired() {
  fetch('/api/logout', { method: 'POST' }).catch(() => {});
  showSignIn('Your sign-in has expired: sign in again.');
}

function showSignIn(message) {
  show('signin');
  // With single sign-on, the provider's button beside the token form.
  fetch('/api/signin', { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : {}))
    .then((o) => {
      if (!o.oidc) return;
      $('signin-oidc-name').textContent = o.provider;
      $('signin-oidc').hidden = false;
    })
    .catch(() => {});
  document.title = 'Sign in · termgate';
  $('signin-error').textContent = message;
  $('signin-error').hidden = !message;
  $('signin-token').focus();
}

$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const err = await login($('signin-token').value.trim());
  if (err) showSignIn(err);
  else location.reload(); // start afresh, signed in, at the same address
});

// ---- the instance list -----------------------------------------------------

function ago(iso) {
  return span(Date.now() - Date.parse(iso));
}

// until is how long from now to iso, as ago writes it.
function until(iso) {
  return span(Date.parse(iso) - Date.now());
}

function span(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 5) return 'a moment';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d`;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

function cell(row, content, className) {
  const td = row.insertCell();
  if (typeof content === 'string') td.textContent = content;
  else td.append(content);
  if (className) td.className = className;
  return td;
}

// sessionURL is the page's address of a session: /t/INSTANCE for the
// default one, /t/INSTANCE+NAME for a named one (bookmarkable), with
// ?login=LOGIN when its shell runs as another user than the default: an
// attach with another login than the session's is refused.
function sessionURL(instance, name, login) {
  return `/t/${encodeURIComponent(instance)}${name ? `+${name}` : ''}${login ? `?login=${encodeURIComponent(login)}` : ''}`;
}

// attachedWho lists who is attached: "alice (web), bob (ssh)".
function attachedWho(list) {
  const via = (v) => (v === 'websocket' ? 'web' : v);
  return list.map((a) => `${a.who || '?'} (${via(a.via)})`).join(', ');
}

// sessionState describes an instance's session: none, attached (who, or
// how many clients), or idle since when and when it is reaped; the login
// its shell runs as first, when it is not the default user.
function sessionState(s) {
  if (!s) return ['no session', 'none'];
  const as = s.login ? `as ${s.login} · ` : '';
  if (s.clients > 0) {
    const who = s.attached && s.attached.length ? attachedWho(s.attached) : `${s.clients} ${s.clients === 1 ? 'client' : 'clients'}`;
    return [`${as}attached: ${who}`, 'attached'];
  }
  // reap_at: when the gateway reaps it (the idle timeout, or a keep).
  const reap = s.reap_at ? ` · reaped in ${until(s.reap_at)}${s.keep_until && s.keep_until >= s.reap_at ? ' (kept)' : ''}` : '';
  if (s.idle_since) return [`${as}idle for ${ago(s.idle_since)}${reap}`, 'idle'];
  return [`${as}idle${reap}`, 'idle'];
}

// labelsOf is an instance's labels as "key=value" strings (only the
// termgate.* ones the gateway shows).
function labelsOf(labels) {
  return Object.entries(labels || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => (v ? `${k}=${v}` : k));
}

// matches tells whether every word of the search box is in a row's
// data-search (name, image, status, labels, session state; lower case).
function matches(row, query) {
  const q = query.trim().toLowerCase();
  return !q || q.split(/\s+/).every((w) => row.dataset.search.includes(w));
}

// applyFilter hides the rows of both lists that the search box does not
// match, and says how many instances are shown (a named session's row,
// below its instance's, is not one).
function applyFilter() {
  const q = $('instances-filter').value;
  let shown = 0;
  const all = [...$('instances').tBodies[0].rows];
  for (const row of all) row.hidden = !matches(row, q);
  const rows = all.filter((r) => r.dataset.instance);
  for (const row of rows) if (!row.hidden) shown++;
  $('instances-count').textContent = q.trim() && rows.length ? `${shown} of ${rows.length}` : '';
  // Recordings come grouped by instance: the name heads each group's
  // first row still shown.
  let recs = 0;
  let prev = '';
  for (const row of $('recordings-table').tBodies[0].rows) {
    row.hidden = !matches(row, q);
    if (row.hidden) continue;
    recs++;
    row.cells[0].textContent = row.dataset.instance === prev ? '' : row.dataset.instance;
    prev = row.dataset.instance;
  }
  $('recordings-empty').hidden = recs !== 0 || $('recordings-table').tBodies[0].rows.length === 0;
  window.termgateList = { shown, rows: rows.length, recordings: recs }; // for the browser test
}

// refreshInstances redraws the list from GET /api/instances: the running
// instances the token may reach, each with its session or null, its image,
// status and labels when the backend has them, and read_only when this
// token may only watch it. It returns false once the login stopped working.
async function refreshInstances() {
  const err = $('instances-error');
  let res;
  try {
    res = await fetch('/api/instances', { cache: 'no-store' });
  } catch {
    err.textContent = 'The gateway is unreachable; retrying.';
    err.hidden = false;
    return true;
  }
  if (res.status === 401) {
    expired();
    return false;
  }
  if (!res.ok) {
    err.textContent = await errorOf(res);
    err.hidden = false;
    return true;
  }
  err.hidden = true;
  const list = (await res.json()).sort((a, b) => a.name.localeCompare(b.name));
  const body = $('instances').tBodies[0];
  body.replaceChildren();
  for (const { name, session: s, sessions, image, status, labels, read_only: ro } of list) {
    const row = body.insertRow();
    row.dataset.instance = name;
    const a = document.createElement('a');
    a.href = sessionURL(name, '', s && s.login);
    a.textContent = name;
    if (ro) a.title = 'your token may only watch this instance: it opens read-only';
    cell(row, a);
    const [state, kind] = sessionState(s);
    const td = cell(row, state, `state ${kind}`);
    if (s && s.idle_since && !s.clients) td.title = `idle since ${new Date(s.idle_since).toLocaleString()}`;
    cell(row, s ? `${ago(s.created)} ago` : '');
    cell(row, s ? bytes(s.bytes_out) : '');
    if (s && s.recording) {
      const rec = document.createElement('a');
      rec.href = `/#play=${encodeURIComponent(name)}/${encodeURIComponent(s.session)}`;
      rec.className = 'recording';
      rec.textContent = 'recording';
      rec.title = 'play this session\'s recording';
      cell(row, rec);
    } else {
      cell(row, '');
    }
    cell(row, image || '', 'image');
    cell(row, status || '', 'status-text');
    const labelList = labelsOf(labels);
    const lt = cell(row, '', 'labels');
    for (const l of labelList) {
      const span = document.createElement('span');
      span.className = 'label';
      span.textContent = l;
      lt.append(span);
    }
    if (ro) {
      row.classList.add('observer');
      const badge = document.createElement('span');
      badge.className = 'readonly';
      badge.textContent = 'read-only';
      badge.title = 'your token may only watch this instance';
      cell(row, badge, 'access');
    } else {
      cell(row, '', 'access');
    }
    row.dataset.search = [name, image, status, state, ro ? 'read-only' : '', ...labelList].join(' ').toLowerCase();
    for (const ns of (sessions || []).filter((x) => x.name)) sessionRow(body, name, ns, ro, row.dataset.search);
  }
  $('instances').hidden = list.length === 0;
  $('instances-empty').hidden = list.length !== 0;
  applyFilter();
  return true;
}

// sessionRow adds, below its instance's row, a row for the instance's
// named session s: its name (linked: it opens its tab), login, who is
// attached or when it is reaped, its age, output and recording. It is
// found by the instance's words too.
function sessionRow(body, instance, s, ro, search) {
  const row = body.insertRow();
  row.className = 'session-row';
  row.dataset.of = instance;
  row.dataset.name = s.name;
  const a = document.createElement('a');
  a.href = sessionURL(instance, s.name, s.login);
  a.textContent = `+${s.name}`;
  a.title = `the session ${s.name} of ${instance} (over SSH: ssh -t ${s.login ? `${s.login}@` : ''}${instance}+${s.name}@HOST)`;
  cell(row, a, 'session-name');
  const [state, kind] = sessionState(s);
  const td = cell(row, state, `state ${kind}`);
  if (s.reap_at && !s.clients) td.title = `reaped at ${new Date(s.reap_at).toLocaleString()} unless a client attaches`;
  cell(row, `${ago(s.created)} ago`);
  cell(row, bytes(s.bytes_out));
  if (s.recording) {
    const rec = document.createElement('a');
    rec.href = `/#play=${encodeURIComponent(instance)}/${encodeURIComponent(s.session)}`;
    rec.className = 'recording';
    rec.textContent = 'recording';
    rec.title = `play the recording of the session ${s.name}`;
    cell(row, rec);
  } else {
    cell(row, '');
  }
  for (const c of ['image', 'status-text', 'labels', 'access']) cell(row, '', c);
  if (ro) row.classList.add('observer');
  row.dataset.search = `${search} +${s.name} ${instance}+${s.name} ${state}`.toLowerCase();
}

// refreshRecordings redraws the recordings list from GET /api/recordings
// (what this token may read, newest first), grouped by instance: hidden
// when the gateway records nothing (404).
async function refreshRecordings() {
  let res;
  try {
    res = await fetch('/api/recordings', { cache: 'no-store' });
  } catch {
    return;
  }
  const section = $('recordings');
  if (res.status === 404) {
    section.hidden = true;
    return;
  }
  if (!res.ok) {
    $('recordings-note').textContent = `Recordings could not be listed: ${await errorOf(res)}`;
    $('recordings-note').hidden = false;
    section.hidden = false;
    return;
  }
  $('recordings-note').hidden = true;
  const list = await res.json();
  // By instance, newest first within each (the gateway sends newest first).
  list.sort((a, b) => a.instance.localeCompare(b.instance) || Date.parse(b.modified) - Date.parse(a.modified));
  const body = $('recordings-table').tBodies[0];
  body.replaceChildren();
  for (const r of list) {
    const row = body.insertRow();
    row.dataset.instance = r.instance;
    row.dataset.session = r.session;
    cell(row, r.instance, 'instance'); // applyFilter leaves it on a group's first row
    const started = r.started || r.modified;
    const st = cell(row, `${ago(started)} ago`);
    st.title = new Date(started).toLocaleString();
    cell(row, r.live ? 'live' : typeof r.duration === 'number' ? span(r.duration * 1000) : '', r.live ? 'live' : '');
    cell(row, bytes(r.size));
    const a = document.createElement('a');
    a.href = `/#play=${encodeURIComponent(r.instance)}/${encodeURIComponent(r.session)}`;
    a.className = 'play';
    a.textContent = `▶ ${r.session.slice(0, 12)}`;
    a.title = `play the recording of session ${r.session}`;
    cell(row, a);
    row.dataset.search = `${r.instance} ${r.session}${r.live ? ' live' : ''}`.toLowerCase();
  }
  if (list.length === 0) {
    $('recordings-note').textContent = 'No recordings yet: sessions are recorded from their start.';
    $('recordings-note').hidden = false;
  }
  section.hidden = false;
  applyFilter();
}

$('instances-filter').addEventListener('input', applyFilter);

async function showPicker() {
  show('picker');
  document.title = 'termgate';
  $('open-name').focus();
  while (await refreshInstances()) {
    await refreshRecordings();
    await new Promise((r) => setTimeout(r, 5000));
  }
}

$('open-form').addEventListener('submit', (e) => {
  e.preventDefault();
  location.assign(`/t/${encodeURIComponent($('open-name').value.trim())}`);
});

$('signout').addEventListener('click', async () => {
  await fetch('/api/logout', { method: 'POST' }).catch(() => {});
  showSignIn('Signed out.');
});

// ---- the terminal ----------------------------------------------------------

// attachedText describes who is attached: "attached: alice (ssh), bob (web,
// read-only)", from a clients event's list (as GET /api/sessions' attached).
function attachedText(list) {
  if (!list || !list.length) return '';
  const via = (v) => (v === 'websocket' ? 'web' : v);
  const access = (a) => (a.granted ? ', granted' : a.read_only ? ', read-only' : '') + (a.hand ? ', ✋' : '');
  return `attached: ${list.map((a) => `${a.who || '?'} (${via(a.via)}${access(a)})`).join(', ')}`;
}

// showAttached puts the list in the status bar; its title has the details.
function showAttached(list) {
  const el = $('attached-list');
  el.textContent = attachedText(list);
  el.title = (list || []).map((a) => `${a.who} via ${a.via} from ${a.remote} since ${new Date(a.since).toLocaleString()}${a.read_only ? ', read-only' : ''}`).join('\n');
  window.termgateAttached = list; // for the browser test
}

// setReadOnly shows an observer what it is: a badge, no Reset or Download
// button, no drop target, and a terminal that sends no keys (the gateway
// would refuse them all anyway).
function setReadOnly(term, ro) {
  $('readonly').hidden = !ro;
  $('reset').hidden = ro;
  $('download').hidden = ro;
  $('pin-size').hidden = ro;
  $('keep').hidden = ro;
  $('new-session').hidden = ro;
  $('paste').hidden = ro;
  $('raise-hand').hidden = !ro;
  $('readonly').textContent = 'read-only';
  readOnly = ro;
  if (term) term.options.disableStdin = ro;
}

// setGranted: a writer let this observer type for the rest of the session
// (input only: reset, keep and pin stay the writers').
function setGranted(term) {
  readOnly = false;
  term.options.disableStdin = false;
  $('raise-hand').hidden = true;
  $('readonly').textContent = 'granted';
}

let readOnly = false; // the latest attach's (or the token's) read_only

// sizeString writes a byte count for people, as the gateway does.
function sizeString(n) {
  if (n < 1000) return `${n} B`;
  if (n < 999500) return `${Math.round(n / 1000)} KB`;
  if (n < 1e7) return `${(n / 1e6).toFixed(1)} MB`;
  return `${Math.round(n / 1e6)} MB`;
}

function setStatus(kind, text) {
  $('status').className = `status ${kind}`;
  $('status').textContent = text;
  $('status').title = text;
}

// showAway shows what happened while this token was away (the away
// event, after the replay): the server's one-line summary in a banner over
// the terminal, never in its stream; the title lists every command kept.
// It stays until dismissed or the next away event.
function showAway(ev) {
  const cmds = ev.commands || [];
  $('away-text').textContent = ev.summary.replace(/^away ([^:]*): /, 'While you were away ($1): ');
  $('away').title = cmds.map((c) => `${c.at}  ${c.command || '(command)'}  exit ${c.exit ?? '?'}`).join('\n');
  $('away').classList.toggle('failed', cmds.some((c) => c.exit));
  $('away').hidden = false;
}

// Connection keeps one terminal attached to one session of an instance
// (its default one, or the named session sessName, run as login when
// given): it reconnects with backoff and resumes where the output stopped.
class Connection {
  constructor(name, sessName, login, term) {
    this.name = name;
    this.sessName = sessName; // '' the default session
    this.login = login; // '' the credential's default login
    this.onAttached = () => {};
    this.term = term;
    this.ws = null;
    this.attached = false; // the current socket got its "attached" event
    this.session = ''; // the session the terminal shows
    this.pos = -1; // the number of the next output byte of that session
    this.failures = 0; // connections in a row that failed or died young
    this.since = 0; // when the current connection attached
    this.timer = 0; // the pending reconnect
    this.retryAt = 0;
    this.reason = ''; // why the current connection ended, if the server said
    this.cause = ''; // why the page lost its session's connection (kept while retrying)
    this.last = ''; // why the latest retry failed
    this.ended = false; // the shell exited: wait for the user
    this.lastAttach = null; // {session, new, gap, resumed}: for tests and debugging
    this.restartUntil = 0; // until then the gateway is restarting (close 1012): retry briskly
    this.resetting = 0; // a confirmed reset waits for the fresh shell since then (0: none)
    this.attempts = 0; // connections tried: for the browser test
    // The shell's window size is the gateway's to decide (its size
    // policy, a pin): want is what this window fits (sent as resize),
    // shown the session's size as last told (the terminal is drawn at it).
    this.size = { want: null, shown: null, pinned: false };
    this.onSize = () => {};
  }

  // want tells the gateway what this window fits (not echoed back).
  want(size) {
    this.size.want = size;
    // An observer's size never applies; a pinned one waits for the
    // gateway's size event.
    if (!this.size.pinned && !readOnly) this.size.shown = size;
    if (this.attached) this.send(JSON.stringify({ type: 'resize', cols: size.cols, rows: size.rows }));
  }

  // told records the session's size from an attached or size event.
  told(cols, rows, pinned) {
    if (!cols || !rows) return;
    this.size.shown = { cols, rows };
    this.size.pinned = !!pinned;
    this.onSize();
  }

  connect() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (this.ws) return;
    // clients=1: the gateway sends a clients event whenever someone
    // attaches or leaves (the status bar's list).
    const want = this.size.want || { cols: this.term.cols, rows: this.term.rows };
    this.asked = want;
    const q = new URLSearchParams({ cols: want.cols, rows: want.rows, clients: 1 });
    if (this.sessName) q.set('name', this.sessName);
    if (this.login) q.set('login', this.login);
    if (this.session && this.pos >= 0) {
      q.set('session', this.session);
      q.set('since', this.pos);
    }
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.path = `/api/instances/${encodeURIComponent(this.name)}/terminal?${q}`;
    const ws = new WebSocket(`${scheme}//${location.host}${this.path}`);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.attempts++;
    this.tries = [...(this.tries || []).slice(-19), Date.now()]; // for the browser test
    $('reconnect-now').hidden = true;
    this.attached = false;
    this.reason = '';
    if (this.resetting) setStatus('resetting', 'resetting… (waiting for the fresh shell)');
    else if (!this.failures) setStatus('connecting', 'connecting…');
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      if (typeof ev.data === 'string') this.event(JSON.parse(ev.data));
      else this.output(new Uint8Array(ev.data));
    };
    ws.onclose = (ev) => {
      if (ws === this.ws) this.closed(ev);
    };
  }

  event(ev) {
    switch (ev.type) {
      case 'attached': {
        // A resume that the server could serve exactly continues the screen;
        // anything else (a new session, a gap) replays it from scratch.
        const resumed = ev.session === this.session && this.pos >= 0 && !ev.gap;
        if (!resumed) this.term.reset();
        this.session = ev.session;
        this.pos = ev.offset - ev.replay;
        this.attached = true;
        this.since = Date.now();
        this.cause = '';
        this.last = '';
        this.restartUntil = 0;
        this.lastAttach = { session: ev.session, new: ev.new, gap: ev.gap, resumed, readOnly: !!ev.read_only };
        setReadOnly(this.term, !!ev.read_only);
        setStatus('connected', 'connected');
        // A reset made over HTTP (no connection then) ends with the new
        // session's attach.
        if (this.resetting && ev.new) this.resetDone();
        this.told(ev.cols, ev.rows, this.size.pinned);
        // The window changed while connecting (a phone's bars and viewport
        // settle then): want kept the new size but could not send it.
        const w = this.size.want;
        if (w && (w.cols !== this.asked.cols || w.rows !== this.asked.rows)) {
          this.want(w);
          this.onSize();
        }
        this.onAttached();
        break;
      }
      case 'size':
        this.told(ev.cols, ev.rows, ev.pinned);
        break;
      case 'hand': {
        // An observer asks to type: one button lets them.
        const g = $('grant');
        g.dataset.who = ev.who;
        g.textContent = `✋ Let ${ev.who} type`;
        g.title = `${ev.who} (${ev.via}, read-only) raised a hand: give them write access until the session is reset`;
        g.hidden = false;
        break;
      }
      case 'granted':
        setGranted(this.term);
        setFilesResult('ok', `${ev.by} let you type in this session`);
        break;
      case 'clients':
        showAttached(ev.attached);
        break;
      case 'reset':
        // With --replay screen, the replay that follows redraws the fresh
        // shell's screen over the notice: the status bar keeps it.
        this.term.reset();
        // A grant of write access ends with its session.
        if (this.lastAttach && this.lastAttach.readOnly) setReadOnly(this.term, true);
        this.term.write('\x1b[2m[termgate] session reset: fresh shell\x1b[0m\r\n');
        this.resetDone();
        setStatus('connected', 'connected · session reset: fresh shell');
        this.session = ev.session;
        this.pos = ev.offset - ev.replay;
        break;
      case 'skipped':
        // This terminal fell too far behind the output (a slow link, a
        // background tab) and the gateway brought it forward: the redraw
        // that follows is the current screen, as a fresh attach gets. The
        // status bar says so; nothing is written into the terminal.
        this.term.reset();
        this.pos = ev.offset - ev.replay;
        this.skipped = (this.skipped || 0) + ev.bytes;
        window.termgateSkipped = this.skipped; // for the browser test
        setStatus('connected', `connected · skipped ${sizeString(ev.bytes)} to catch up`);
        break;
      case 'away':
        showAway(ev);
        break;
      case 'exit':
        this.ended = true;
        this.reason = `the shell exited with status ${ev.code}`;
        break;
      case 'error':
        // Either a refused control message or a notice (a reset refused by
        // the rate limit, input dropped while the shell does not read it:
        // the connection stays up), or the reason the connection is about
        // to end. The terminal shows it either way, as SSH clients see
        // their notices.
        this.reason = ev.message;
        console.warn('termgate:', ev.message);
        // A refused reset (the rate limit, a read-only token) ends the
        // wait: the old shell is still there.
        if (this.resetting && this.attached) {
          this.resetDone();
          setStatus('connected', `connected · reset refused: ${ev.message.replace(/^\[termgate\] /, '')}`);
        }
        if (this.attached) this.term.write(`\r\n\x1b[2m[termgate] ${ev.message.replace(/^\[termgate\] /, '')}\x1b[0m\r\n`);
        break;
    }
  }

  output(data) {
    this.term.write(data);
    this.pos += data.length;
  }

  send(data) {
    if (this.ws && this.attached && this.ws.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  async closed(ev) {
    this.ws = null;
    const wasAttached = this.attached;
    this.attached = false;
    if (this.ended) {
      setStatus('ended', `session ended: ${this.reason}`);
      $('reconnect').hidden = false;
      return;
    }
    let reason = this.reason;
    if (!wasAttached && !reason) {
      // The handshake failed, and browsers do not say why: ask the API.
      if (!(await signedIn())) {
        expired();
        return;
      }
      reason = (await refusal(this.path)) || 'the gateway or the instance is not reachable';
    }
    if (!reason) reason = `connection lost${ev.code && ev.code !== 1006 ? ` (code ${ev.code})` : ''}`;
    if (ev.code === 1012) {
      // "service restart": the gateway is being restarted (an upgrade) and
      // the session keeps running in its instance. Come back as soon as the
      // next gateway listens, resuming with session and since.
      this.restartUntil = Date.now() + 60000;
      this.failures = 0;
    }
    if (wasAttached) {
      if (Date.now() - this.since > 10000) this.failures = 0;
      this.cause = reason;
      this.last = '';
    } else if (!this.cause) {
      this.cause = reason;
    } else {
      this.last = reason;
    }
    this.failures++;
    // Backoff, capped at 1.5 s (±20 %) while the tab is visible: the page
    // is back within 2 s of the gateway (a restart, the network), and one
    // failed WebSocket handshake per 1.5 s costs the gateway little. A
    // hidden tab backs off to 30 s; becoming visible retries at once.
    const cap = document.hidden ? 30000 : 1500;
    let delay = Math.min(cap, 500 * 2 ** Math.min(this.failures - 1, 6)) * (0.8 + 0.4 * Math.random());
    if (Date.now() < this.restartUntil) delay = Math.min(delay, 200 + 300 * Math.random());
    this.retryAt = Date.now() + delay;
    this.timer = setTimeout(() => this.connect(), delay);
    this.tick();
  }

  // startReset shows the wait for the fresh shell after a confirmed reset:
  // the button disabled, the old screen dimmed, the status saying so. It
  // ends with the reset event (the fresh shell attached), the new
  // session's attach, a refusal, or after 30 s (the gateway would have
  // said something by then; the status then shows whatever it is).
  startReset() {
    this.resetting = Date.now();
    $('reset').disabled = true;
    $('term-wrap').classList.add('resetting');
    setStatus('resetting', 'resetting… (waiting for the fresh shell)');
    clearTimeout(this.resetTimer);
    this.resetTimer = setTimeout(() => {
      if (!this.resetting) return;
      this.resetDone();
      if (this.attached) setStatus('connected', 'connected · the reset got no answer: reload to see the session as it is');
    }, 30000);
  }

  resetDone() {
    this.resetting = 0;
    clearTimeout(this.resetTimer);
    $('reset').disabled = false;
    $('term-wrap').classList.remove('resetting');
  }

  // tick refreshes the reconnect countdown.
  tick() {
    if (!this.timer) return;
    $('reconnect-now').hidden = false;
    const s = Math.max(0, Math.ceil((this.retryAt - Date.now()) / 1000));
    const last = this.last && this.last !== this.cause ? `; last try: ${this.last}` : '';
    setStatus('reconnecting', `reconnecting${s ? ` in ${s} s` : '…'} (${this.cause}${last})`);
  }

  // now skips the wait of a pending reconnect (network back, tab visible,
  // the page shown again from the back/forward cache, Reconnect now).
  now() {
    if (this.timer) this.connect();
  }

  // restart starts over without resuming: after the shell exited, or after a
  // reset made without a connection.
  restart() {
    this.ended = false;
    this.session = '';
    this.pos = -1;
    this.failures = 0;
    $('reconnect').hidden = true;
    if (this.ws) this.ws.close();
    else this.connect();
  }
}

async function copySelection(term) {
  const text = term.getSelection();
  if (!text) return;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No async clipboard (plain http to another host): copy the old way.
    const ta = document.createElement('textarea');
    ta.value = text;
    document.body.append(ta);
    ta.select();
    document.execCommand('copy');
    ta.remove();
  }
  term.focus();
}

async function pasteClipboard(term) {
  try {
    term.paste(await navigator.clipboard.readText());
  } catch {
    alert(`The browser does not let this page read the clipboard: paste with ${isMac ? '⌘V' : 'Ctrl+Shift+V'} instead.`);
  }
  term.focus();
}

async function showTerminal(name, sessName, login) {
  show('terminal');
  const addr = sessName ? `${name}+${sessName}` : name;
  document.title = `${addr} · termgate`;
  $('term-name').textContent = addr;

  const term = new Terminal({
    cursorBlink: true,
    scrollback: 10000,
    fontSize: 14,
    fontFamily: '"DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
    theme: { background: '#1b1d23', foreground: '#d8dee9', cursor: '#d8dee9', selectionBackground: '#4c566a' },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open($('term'));
  const typed = setupKeyBar(term, $('keybar'), $('keys-toggle'));
  fit.fit();
  term.focus();

  setReadOnly(term, !!(window.termgateIdentity && window.termgateIdentity.read_only));
  const conn = new Connection(name, sessName, login, term);
  window.termgate = { term, conn }; // for the browser test, and for the console
  setupFiles(name, conn, term);
  const enc = new TextEncoder();
  term.onData((d) => conn.send(enc.encode(typed(d))));
  term.onBinary((d) => conn.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
  setupSize(term, fit, conn);
  term.onTitleChange((t) => {
    document.title = t ? `${addr}: ${t} · termgate` : `${addr} · termgate`;
  });
  const tabs = setupTabs(conn, term);


  // Ctrl+Shift+C copies, Ctrl+Shift+V pastes (the browser's paste event,
  // which xterm handles); on a Mac ⌘C and ⌘V already do.
  let toldReadOnly = false;
  term.attachCustomKeyEventHandler((e) => {
    // An observer's keys go nowhere: say so once, not for every key.
    if (readOnly && e.type === 'keydown' && !toldReadOnly && !e.ctrlKey && !e.metaKey && !e.altKey) {
      toldReadOnly = true;
      setFilesResult('bad', 'read-only: your keys are not sent to the shell (Raise hand asks the writers to let you type)');
    }
    if (isMac || e.type !== 'keydown' || !e.ctrlKey || !e.shiftKey) return true;
    if (e.code === 'KeyC') {
      e.preventDefault();
      copySelection(term);
      return false;
    }
    return e.code !== 'KeyV';
  });
  $('keep').addEventListener('click', () => keepSession(conn, term));
  $('raise-hand').addEventListener('click', () => {
    if (conn.attached) conn.send(JSON.stringify({ type: 'raise-hand' }));
    setFilesResult('', 'hand raised: the writers are asked to let you type');
    term.focus();
  });
  $('grant').addEventListener('click', () => {
    const who = $('grant').dataset.who;
    if (conn.attached && who) conn.send(JSON.stringify({ type: 'grant', who }));
    $('grant').hidden = true;
    term.focus();
  });
  $('copy').addEventListener('click', () => copySelection(term));
  $('paste').addEventListener('click', () => pasteClipboard(term));
  $('away-close').addEventListener('click', () => {
    $('away').hidden = true;
    term.focus();
  });
  $('reconnect').addEventListener('click', () => {
    conn.restart();
    term.focus();
  });
  $('reset').addEventListener('click', async () => {
    const ok = confirm(`Reset the session ${addr}?\n\nThis kills its shell and every process that shell started in the instance, then starts a fresh shell. The instance's other sessions are left alone.`);
    if (ok && conn.attached) {
      conn.startReset();
      conn.send(JSON.stringify({ type: 'reset' }));
    } else if (ok) {
      conn.startReset();
      const res = await fetch(`/api/instances/${encodeURIComponent(name)}/terminal/reset${sessionQuery(conn)}`, { method: 'POST' }).catch(() => null);
      if (res && res.ok) {
        conn.restart();
      } else {
        conn.resetDone();
        setStatus('reconnecting', `reset failed: ${res ? await errorOf(res) : 'the gateway is unreachable'}`);
      }
    }
    term.focus();
  });

  // Reconnect at once when the network comes back or the tab is looked at;
  // a clock that jumped while the page was visible means the machine slept,
  // and the connection is probably dead without knowing it yet.
  window.addEventListener('online', () => conn.now());
  window.addEventListener('pageshow', () => conn.now());
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) conn.now();
  });
  $('reconnect-now').addEventListener('click', () => {
    conn.now();
    term.focus();
  });
  let last = Date.now();
  setInterval(() => {
    const now = Date.now();
    if (now - last > 20000 && !document.hidden && conn.ws) {
      conn.reason = 'the computer was asleep';
      conn.ws.close();
    }
    last = now;
    conn.tick();
  }, 1000);

  // Without ?login=, attach as the session's own login when it has one:
  // the first list says (waited for briefly: the attach goes on without).
  if (!login) await Promise.race([tabs.first, new Promise((r) => setTimeout(r, 1500))]);
  conn.connect();
}

// ---- tabs: the instance's sessions, and "+" for a new one ------------------

// setupTabs keeps the tab bar: a tab per session of conn's instance (from
// GET /api/sessions after each attach and every 5 s while the page is
// visible), the default one first and named by its instance, the tab's own
// marked; each tab is a link to its session's address, so switching tabs
// attaches to that session (its screen replayed as on any reattach) and
// every tab can be bookmarked or opened in a browser tab of its own. "+"
// asks for a new session's name (and for its login when the credential may
// use more than one) and opens it. It returns {first}: the first list.
function setupTabs(conn, term) {
  let known = []; // the instance's sessions, oldest first, as last listed
  let shown = 0; // how many tabs the bar has
  const tab = (s) => {
    const a = document.createElement('a');
    a.className = 'tab';
    a.href = sessionURL(conn.name, s.name, s.login);
    a.dataset.name = s.name;
    a.textContent = s.name || conn.name;
    if (!s.name) a.classList.add('default');
    if (s.name === conn.sessName) {
      a.classList.add('current');
      a.setAttribute('aria-current', 'page');
    }
    if (s.login) {
      const l = document.createElement('span');
      l.className = 'tab-login';
      l.textContent = s.login;
      a.append(l);
    }
    if (s.clients > 0 && s.name !== conn.sessName) a.classList.add('busy');
    if (s.pending) a.classList.add('pending');
    const [state] = s.pending ? [s.pending] : sessionState(s);
    a.title = `${s.name ? `the session ${s.name}` : 'the default session'} of ${conn.name}: ${state}`;
    return a;
  };
  const render = () => {
    const items = [...known];
    // This tab's session before the gateway lists it (being opened), and
    // the default session's tab always: attaching starts it.
    if (!known.some((s) => s.name === conn.sessName)) items.push({ name: conn.sessName, login: conn.login, clients: 0, pending: 'opening' });
    if (!items.some((s) => !s.name)) items.push({ name: '', clients: 0, pending: 'not started: opening it starts it' });
    items.sort((a, b) => Number(b.name === '') - Number(a.name === '')); // stable: the default first
    $('tab-list').replaceChildren(...items.map(tab));
    // Bring this tab into view when the tabs change, not at every
    // refresh: the user may be scrolling them.
    if (items.length !== shown) $('tab-list').querySelector('.current')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    shown = items.length;
    window.termgateTabs = items.map((s) => s.name); // for the browser test
  };
  const refresh = async () => {
    let res;
    try {
      res = await fetch('/api/sessions', { cache: 'no-store' });
    } catch {
      return; // the connection's status says why
    }
    if (!res.ok) return;
    known = (await res.json()).filter((s) => s.instance === conn.name);
    const mine = known.find((s) => s.name === conn.sessName);
    if (mine && mine.login && !conn.login && !conn.attempts) conn.login = mine.login;
    render();
  };
  render();
  const first = refresh();
  conn.onAttached = refresh;
  setInterval(() => {
    if (!document.hidden) refresh();
  }, 5000);

  // "+": the name, checked as the gateway checks it; the login picker
  // only when the credential may use more than one login. The logins are
  // GET /api/whoami's "logins" (the credential's, in its order, '*' for
  // any: issue 36 item 2 serves them); without that field, as from a
  // gateway without logins, there is no picker and the gateway's default
  // login applies.
  const dialog = $('new-session-dialog');
  const nameIn = $('new-session-name');
  const err = $('new-session-error');
  const logins = ((window.termgateIdentity || {}).logins || []).filter((l) => typeof l === 'string' && l);
  const anyLogin = logins.includes('*');
  const listed = logins.filter((l) => l !== '*');
  const pick = anyLogin || listed.length > 1;
  $('new-session-login-row').hidden = !pick;
  $('new-session-login').hidden = anyLogin;
  $('new-session-login-any').hidden = !anyLogin;
  $('new-session-login').replaceChildren(...listed.map((l) => new Option(l, l)));
  $('new-session-login-any').value = listed[0] || '';
  $('new-session-instance').textContent = conn.name;
  const chosen = () => (pick ? (anyLogin ? $('new-session-login-any').value.trim() : $('new-session-login').value) : '');
  const check = () => {
    const name = nameIn.value.trim();
    const login = chosen();
    for (const el of document.querySelectorAll('.new-session-addr')) el.textContent = `${login ? `${login}@` : ''}${conn.name}+${name || 'NAME'}`;
    if (!name) return 'Give the session a name.';
    if (!SESSION.test(name)) return `"${name.slice(0, 40)}" is not a session name: use lowercase letters, digits, '_' and '-' (at most 32, starting with a letter or digit).`;
    return '';
  };
  $('new-session-login').addEventListener('change', check);
  $('new-session-login-any').addEventListener('input', check);
  nameIn.addEventListener('input', () => {
    const msg = nameIn.value ? check() : '';
    err.textContent = msg;
    err.hidden = !msg;
  });
  $('new-session').addEventListener('click', () => {
    nameIn.value = '';
    err.hidden = true;
    check();
    dialog.showModal();
    nameIn.focus();
  });
  $('new-session-cancel').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => term.focus());
  $('new-session-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const msg = check();
    if (msg) {
      err.textContent = msg;
      err.hidden = false;
      nameIn.focus();
      return;
    }
    const name = nameIn.value.trim();
    // An existing session opens as it is, with its own login.
    const existing = known.find((s) => s.name === name);
    const login = existing ? existing.login : chosen();
    dialog.close();
    location.assign(sessionURL(conn.name, name, login));
  });
  return { first };
}

// sessionQuery is the query that addresses conn's session in the API's
// per-session routes (reset, keep): name= for a named one.
function sessionQuery(conn, extra = {}) {
  const q = new URLSearchParams(extra);
  if (conn.sessName) q.set('name', conn.sessName);
  const t = q.toString();
  return t ? `?${t}` : '';
}

// sessionLabel names conn's session for people: "web1" or "web1+build".
function sessionLabel(conn) {
  return conn.sessName ? `${conn.name}+${conn.sessName}` : conn.name;
}

// keepSession asks how long to keep the tab's session with no client
// attached (POST .../keep?for=D[&name=S], up to the gateway's --max-keep)
// and says the outcome in the status bar.
async function keepSession(conn, term) {
  const d = prompt(`Keep the session ${sessionLabel(conn)} running with no client attached for how long?\n\nA duration such as 8h or 90m (at most the gateway's --max-keep), or off.`, '8h');
  term.focus();
  if (!d) return;
  const res = await fetch(`/api/instances/${encodeURIComponent(conn.name)}/keep${sessionQuery(conn, { for: d.trim() })}`, { method: 'POST' }).catch(() => null);
  if (!res) return setFilesResult('bad', 'keep failed: the gateway is unreachable');
  if (res.status === 401) return expired();
  if (!res.ok) return setFilesResult('bad', `keep failed: ${await errorOf(res)}`);
  const { keep_until: k } = await res.json();
  setFilesResult('ok', k ? `kept until ${new Date(k).toLocaleString()} with no client attached` : 'keep off: reaped after the idle timeout');
}

// ---- window size: the page asks, the gateway decides -----------------------

// setupSize follows the window (at most every 50 ms): it tells the gateway
// what the window fits and draws the terminal at the session's size, which
// another client's window or a pin may make different. A larger window
// shows the session at its size; a smaller one says so.
function setupSize(term, fit, conn) {
  const draw = () => {
    const { want, shown, pinned } = conn.size;
    const s = shown || want;
    if (s && (term.cols !== s.cols || term.rows !== s.rows)) term.resize(s.cols, s.rows);
    const note = $('size-note');
    let text = '';
    if (want && s && (s.cols !== want.cols || s.rows !== want.rows)) {
      const dims = `${s.cols}×${s.rows}`;
      if (s.cols > want.cols || s.rows > want.rows) {
        text = `window smaller than the session (${dims})`;
        if (!pinned && !readOnly) text += ': type to make it yours';
      } else {
        text = pinned ? `pinned at ${dims}` : `session at ${dims} (another client's size)`;
      }
    } else if (pinned && s) {
      text = `pinned at ${s.cols}×${s.rows}`;
    }
    note.textContent = text;
    note.title = text; // cut on a narrow bar
    note.hidden = !text;
    $('pin-size').textContent = pinned ? 'Unpin size' : 'Pin size';
    window.termgateSize = { want, shown: s, pinned, note: text, cols: term.cols, rows: term.rows }; // for the browser test
  };
  conn.onSize = draw;
  const layout = () => {
    const p = fit.proposeDimensions();
    if (!p || !p.cols || !p.rows || !isFinite(p.cols) || !isFinite(p.rows)) return;
    const want = { cols: Math.max(1, Math.floor(p.cols)), rows: Math.max(1, Math.floor(p.rows)) };
    const w = conn.size.want;
    if (!w || w.cols !== want.cols || w.rows !== want.rows) conn.want(want);
    draw();
  };
  layout();
  let fitting = 0;
  new ResizeObserver(() => {
    clearTimeout(fitting);
    fitting = setTimeout(layout, 50);
  }).observe($('term'));
  $('pin-size').addEventListener('click', () => {
    const s = conn.size.shown || conn.size.want;
    if (!conn.attached || !s) return;
    conn.send(JSON.stringify(conn.size.pinned ? { type: 'pin-size', auto: true } : { type: 'pin-size', cols: s.cols, rows: s.rows }));
    term.focus();
  });
}

// ---- files: drop onto the terminal to upload, a dialog to download ---------

// filesURL is the files route for path in instance name: a relative path is
// the working directory's of session's shell (the gateway finds it), or
// the home directory's without a session.
function filesURL(name, path, session) {
  const q = new URLSearchParams({ path });
  if (session) q.set('session', session);
  return `/api/instances/${encodeURIComponent(name)}/files?${q}`;
}

// setFilesResult shows the latest transfer's outcome in the bar: the
// terminal's stream is the shell's alone.
function setFilesResult(kind, text) {
  const el = $('files-result');
  el.className = `files-result ${kind}`;
  el.textContent = text;
  el.title = text;
  window.termgateFiles = { kind, text }; // for the browser test
}

function setProgress(fraction) {
  if (fraction !== null) window.termgateProgressMax = Math.max(window.termgateProgressMax || 0, fraction); // for the browser test
  $('upload-progress').hidden = fraction === null;
  $('upload-bar').style.width = `${Math.round(100 * (fraction || 0))}%`;
}

// uploadOne PUTs file into the shell's directory with XHR (fetch reports no
// upload progress) and resolves to {ok, text}, the result line.
function uploadOne(name, session, file) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', filesURL(name, file.name, session));
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total) setProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      if (xhr.status === 204) {
        // Content-Location is the route of the absolute path written.
        let where = file.name;
        try {
          where = new URL(xhr.getResponseHeader('Content-Location'), location.href).searchParams.get('path') || where;
        } catch {}
        resolve({ ok: true, text: `uploaded ${file.name} to ${where} (${file.size} bytes)` });
        return;
      }
      let msg = `${xhr.status} ${xhr.statusText}`;
      try {
        msg = JSON.parse(xhr.responseText).error || msg;
      } catch {}
      resolve({ ok: false, status: xhr.status, text: `upload of ${file.name} failed: ${msg}` });
    };
    xhr.onerror = () => resolve({ ok: false, text: `upload of ${file.name} failed: the browser could not send it (a folder?) or the gateway is unreachable` });
    setProgress(0);
    xhr.send(file);
  });
}

// setupFiles makes the terminal a drop target for uploads (one file after
// another) and wires the Download button's dialog.
function setupFiles(name, conn, term) {
  const wrap = $('term-wrap');
  let queue = Promise.resolve();
  const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');
  wrap.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    // Always taken, so that a drop never makes the browser open the file
    // in place of the terminal; a read-only view shows no target.
    e.preventDefault();
    e.dataTransfer.dropEffect = readOnly ? 'none' : 'copy';
    wrap.classList.toggle('drop-target', !readOnly);
  });
  wrap.addEventListener('dragleave', () => wrap.classList.remove('drop-target'));
  wrap.addEventListener('drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    wrap.classList.remove('drop-target');
    const files = Array.from(e.dataTransfer.files || []);
    if (readOnly) {
      setFilesResult('bad', 'read-only token: drop ignored, nothing uploaded');
      return;
    }
    if (!files.length) return;
    queue = queue.then(async () => {
      for (const [i, file] of files.entries()) {
        const session = conn.session;
        if (!session) {
          setFilesResult('bad', `upload of ${file.name} not started: the terminal is not attached yet`);
          continue;
        }
        setFilesResult('', `uploading ${file.name}${files.length > 1 ? ` (${i + 1} of ${files.length})` : ''}…`);
        const r = await uploadOne(name, session, file);
        setProgress(null);
        if (r.status === 401) return expired();
        setFilesResult(r.ok ? 'ok' : 'bad', r.text);
      }
    });
    term.focus();
  });

  const dialog = $('download-dialog');
  $('download-instance').textContent = name;
  $('download').addEventListener('click', () => {
    $('download-path').value = '';
    dialog.showModal();
    $('download-path').focus();
  });
  $('download-cancel').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => term.focus());
  $('download-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const path = $('download-path').value.trim();
    dialog.close();
    if (!path) return;
    const url = filesURL(name, path, conn.session);
    // HEAD first: a missing file or a refusal is told here, not by a
    // failed download in the browser's list or an error page.
    let res = await fetch(url, { method: 'HEAD', cache: 'no-store' }).catch(() => null);
    if (!res) return setFilesResult('bad', `download of ${path} failed: the gateway is unreachable`);
    if (res.status === 401) return expired();
    if (!res.ok) {
      // HEAD has no body: ask again for the error's text.
      res = await fetch(url, { cache: 'no-store' }).catch(() => null);
      return setFilesResult('bad', `download of ${path} failed: ${res ? await errorOf(res) : 'the gateway is unreachable'}`);
    }
    // The browser downloads it (Content-Disposition: attachment).
    const a = document.createElement('a');
    a.href = url;
    a.download = '';
    document.body.append(a);
    a.click();
    a.remove();
    setFilesResult('ok', `downloading ${path} (${res.headers.get('Content-Length') || '?'} bytes)`);
    window.termgateDownloadURL = url; // for the browser test
  });
}

// ---- the recording player ------------------------------------------------

// playTarget returns [instance, session] from a #play=INSTANCE/SESSION
// address, or null.
function playTarget() {
  const v = new URLSearchParams(location.hash.slice(1)).get('play');
  const m = v && v.match(/^([^/]+)\/([^/]+)$/);
  return m && NAME.test(m[1]) && NAME.test(m[2]) ? [m[1], m[2]] : null;
}

async function showPlayer(instance, session) {
  show('player');
  document.title = `recording of ${instance} · termgate`;
  $('play-name').textContent = `${instance} · ${session}`;
  const fail = (msg) => {
    $('play-error').textContent = msg;
    $('play-error').hidden = false;
    $('play-controls').hidden = true;
    window.termgatePlayer = { error: msg }; // for the browser test
  };
  let text;
  try {
    const res = await fetch(`/api/recordings/${encodeURIComponent(instance)}/${encodeURIComponent(session)}`, { cache: 'no-store' });
    if (res.status === 401) return expired();
    if (!res.ok) return fail(`No recording to play for ${instance} session ${session}: ${await errorOf(res)}`);
    text = await res.text();
  } catch {
    return fail('The gateway is unreachable: reload the page to try again.');
  }
  let cast;
  try {
    cast = parseCast(text);
  } catch (e) {
    return fail(`The recording of ${instance} session ${session} is not a valid asciicast v2 file: ${e.message}`);
  }
  const term = new Terminal({
    disableStdin: true,
    scrollback: 10000,
    fontSize: 14,
    cols: cast.width,
    rows: cast.height,
    fontFamily: '"DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
    theme: { background: '#1b1d23', foreground: '#d8dee9', cursor: '#d8dee9', selectionBackground: '#4c566a' },
  });
  term.open($('play-term'));
  const secs = (s) => `${s.toFixed(1)} s`;
  const seek = $('play-seek');
  let dragging = false;
  const update = (p) => {
    if (!dragging) seek.value = String(p.pos);
    seek.setAttribute('aria-valuetext', `${secs(p.pos)} of ${secs(p.duration)}`);
    $('play-pause').textContent = p.paused ? (p.finished ? 'Replay' : 'Play') : 'Pause';
    $('play-time').textContent = `${secs(p.pos)} / ${secs(p.duration)}${p.finished ? ' · finished' : ''}`;
    $('play-marker').textContent = p.marker ? `marker: ${p.marker}` : '';
    for (const b of document.querySelectorAll('#play-speeds button')) b.classList.toggle('on', Number(b.dataset.speed) === p.speed);
  };
  const player = new Player(term, cast, update);
  window.termgatePlayer = player; // for the browser test, and for the console
  // The seek bar: dragging redraws the screen at each position (the
  // player draws only the latest of quick seeks); the keys move by 5 s
  // (arrows) and 30 s (Page Up/Down), Home and End to either end.
  seek.max = String(player.duration);
  seek.addEventListener('pointerdown', () => (dragging = true));
  seek.addEventListener('pointerup', () => (dragging = false));
  seek.addEventListener('input', () => player.seek(Number(seek.value)));
  seek.addEventListener('keydown', (e) => {
    const step = { ArrowLeft: -5, ArrowDown: -5, ArrowRight: 5, ArrowUp: 5, PageDown: -30, PageUp: 30 }[e.key];
    let to = null;
    if (step !== undefined) to = player.pos + step;
    else if (e.key === 'Home') to = 0;
    else if (e.key === 'End') to = player.duration;
    if (to === null) return;
    e.preventDefault();
    player.seek(to);
  });
  window.termgate = { term }; // the browser test's helpers read termgate.term
  $('play-pause').addEventListener('click', () => (player.paused ? player.play() : player.pause()));
  for (const b of document.querySelectorAll('#play-speeds button')) {
    b.addEventListener('click', () => player.setSpeed(Number(b.dataset.speed)));
  }
  player.play();
}

// ---- start -----------------------------------------------------------------

// takeToken removes a token from the address (…/#token=… or …/?token=…:
// the address the gateway prints at its first start) and returns it, or
// null. The fragment form never reaches the server; the gateway may refuse
// the query form before this page loads.
function takeToken() {
  const query = new URLSearchParams(location.search);
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get('token') ?? query.get('token');
  if (token === null) return null;
  query.delete('token');
  hash.delete('token');
  const q = query.toString();
  const h = hash.toString();
  history.replaceState(null, '', location.pathname + (q ? `?${q}` : '') + (h ? `#${h}` : ''));
  return token;
}

async function main() {
  // Exchange a token from the address for the login cookie, once; when
  // already signed in, only if the user says so.
  const token = takeToken();
  let me = await whoami(); // null: unreachable, which counts as signed in (the views retry)
  const signed = !me || !me.error;
  let useToken = token !== null;
  if (useToken && me && !me.error) useToken = await askSwitch(me, token);
  if (useToken) {
    const err = await login(token);
    if (err) return showSignIn(`The token in the address was refused: ${err}`);
    me = await whoami();
  } else if (!signed) {
    return showSignIn('');
  }
  showIdentity(me && !me.error ? me : null);
  const play = playTarget();
  if (play) return showPlayer(...play);
  const m = location.pathname.match(/^\/t\/([^/]+)$/);
  if (!m) return showPicker();
  // /t/INSTANCE or /t/INSTANCE+SESSION ('+' never in an instance name).
  let addr;
  try {
    addr = decodeURIComponent(m[1]);
  } catch {
    return showPicker();
  }
  const plus = addr.indexOf('+');
  const name = plus < 0 ? addr : addr.slice(0, plus);
  const sessName = plus < 0 ? '' : addr.slice(plus + 1);
  if (!NAME.test(name) || (plus >= 0 && !SESSION.test(sessName))) return showPicker();
  showTerminal(name, sessName, new URLSearchParams(location.search).get('login') || '');
}

// A signed-in tab given a new #token=… address only sees the hash change.
window.addEventListener('hashchange', () => {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has('token') || h.has('play') || !$('player').hidden) location.reload();
});

main();
