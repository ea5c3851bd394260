// The recording player: plays an asciicast v2 file (the gateway's
// --record-dir recordings, served by GET /api/recordings/INSTANCE/SESSION)
// in an xterm.js terminal, with its timing, pause and speed. The file is
// untrusted: it is only ever parsed with JSON.parse, and its output reaches
// the page only through term.write (the terminal draws it as text).

const MAX_SIZE = 1000; // the largest width or height accepted (as the gateway's resize)
// record/scan.go offsetMarker: where a durable session's recording stands in its output.
const OFFSET_MARKER = 'termgate: at output byte ';

// parseCast parses an asciicast v2 file: {width, height, idle, events},
// events as [time, code, data] with times that never go backwards. It
// throws an Error that says which line is wrong and why.
export function parseCast(text) {
  const lines = text.split('\n');
  let header;
  try {
    header = JSON.parse(lines[0]);
  } catch {
    throw new Error('line 1 is not an asciicast header (not JSON)');
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw new Error('line 1 is not an asciicast header (not a JSON object)');
  if (header.version !== 2) throw new Error(`asciicast version ${JSON.stringify(header.version)} is not supported (only version 2)`);
  const size = (v) => Number.isInteger(v) && v >= 1 && v <= MAX_SIZE;
  if (!size(header.width) || !size(header.height)) throw new Error(`the header's width and height must be whole numbers from 1 to ${MAX_SIZE}`);
  const idle = typeof header.idle_time_limit === 'number' && header.idle_time_limit > 0 ? header.idle_time_limit : 0;
  const events = [];
  let last = 0;
  for (let i = 1; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    let ev;
    try {
      ev = JSON.parse(lines[i]);
    } catch {
      throw new Error(`line ${i + 1} is not JSON`);
    }
    if (!Array.isArray(ev) || ev.length < 3 || typeof ev[0] !== 'number' || !Number.isFinite(ev[0]) || ev[0] < 0 ||
        typeof ev[1] !== 'string' || typeof ev[2] !== 'string') {
      throw new Error(`line ${i + 1} is not an event ([time, code, data])`);
    }
    last = Math.max(last, ev[0]);
    events.push([last, ev[1], ev[2]]);
  }
  return { width: header.width, height: header.height, idle, events };
}

// shorten caps the pauses between events at limit seconds (the header's
// idle_time_limit, else DEFAULT_IDLE): a recording spans every reconnect of
// its session, with the hours between them as they were.
const DEFAULT_IDLE = 5;
function shorten(events, limit) {
  let shift = 0;
  let prev = 0;
  return events.map(([t, code, data]) => {
    if (t - prev > limit) shift += t - prev - limit;
    prev = t;
    return [t - shift, code, data];
  });
}

// Player writes a parsed recording to a terminal at the recorded pace
// (times speed), from a clock it can pause.
export class Player {
  constructor(term, cast, onUpdate) {
    this.term = term;
    this.width = cast.width;
    this.height = cast.height;
    this.events = shorten(cast.events, cast.idle || DEFAULT_IDLE);
    this.duration = this.events.length ? this.events[this.events.length - 1][0] : 0;
    this.onUpdate = onUpdate || (() => {});
    this.speed = 1;
    this.paused = true;
    this.next = 0; // the index of the next event to play
    this.base = 0; // the recording's time when the clock last started
    this.started = 0; // performance.now() then
    this.timer = 0;
    this.marker = '';
    this.term.resize(this.width, this.height);
  }

  // pos is the recording's time, in seconds, that the player has reached.
  get pos() {
    const p = this.paused ? this.base : this.base + ((performance.now() - this.started) / 1000) * this.speed;
    return Math.min(p, this.duration);
  }

  get finished() {
    return this.next >= this.events.length;
  }

  play() {
    if (!this.paused) return;
    if (this.finished) this.restart();
    this.paused = false;
    this.started = performance.now();
    this.tick();
  }

  pause() {
    if (this.paused) return;
    this.base = this.pos;
    this.paused = true;
    clearTimeout(this.timer);
    this.onUpdate(this);
  }

  setSpeed(speed) {
    this.base = this.pos;
    this.started = performance.now();
    this.speed = speed;
    if (!this.paused) {
      clearTimeout(this.timer);
      this.tick();
    }
    this.onUpdate(this);
  }

  restart() {
    clearTimeout(this.timer);
    this.term.reset();
    this.term.resize(this.width, this.height);
    this.next = 0;
    this.base = 0;
    this.marker = '';
  }

  // seek moves to time t (seconds, clamped to the recording): the screen
  // at t is drawn again from the start, every output up to t in one write
  // per resize, so scrubbing is quick even through a long recording. A
  // playing player goes on playing from there.
  //
  // The terminal parses what it is given later: the redraw waits until
  // what was written before is parsed (else it would land after the
  // reset), and of several seeks meanwhile only the latest is drawn.
  seek(t) {
    clearTimeout(this.timer);
    this.timer = 0;
    const to = Math.min(Math.max(Number(t) || 0, 0), this.duration);
    this.base = to; // pos reads it while the redraw waits
    this.started = performance.now();
    const gen = (this.seeking = (this.seeking || 0) + 1);
    this.term.write('', () => {
      if (gen !== this.seeking) return;
      this.term.reset();
      this.term.resize(this.width, this.height);
      this.next = 0;
      this.marker = '';
      this.apply(to);
      this.base = to;
      this.started = performance.now();
      this.seeked = to; // for the browser test
      if (this.paused) this.onUpdate(this);
      else this.tick();
    });
    this.onUpdate(this);
  }

  // apply draws every event due at time now (the recording's seconds), in
  // one write between resizes.
  apply(now) {
    let out = '';
    while (this.next < this.events.length && this.events[this.next][0] <= now) {
      const [, code, data] = this.events[this.next++];
      if (code === 'o') {
        out += data;
      } else if (code === 'r') {
        const m = /^(\d{1,4})x(\d{1,4})$/.exec(data);
        const cols = m ? Number(m[1]) : 0;
        const rows = m ? Number(m[2]) : 0;
        if (cols >= 1 && cols <= MAX_SIZE && rows >= 1 && rows <= MAX_SIZE) {
          if (out) this.term.write(out);
          out = '';
          this.term.resize(cols, rows);
        }
      } else if (code === 'm') {
        // The gateway's byte-number markers are bookkeeping for continuing
        // a durable session's recording, not chapters: not shown.
        if (!String(data).startsWith(OFFSET_MARKER)) this.marker = data;
      }
      // 'i' (input) and unknown codes are not shown.
    }
    if (out) this.term.write(out);
  }

  // tick plays every event that is due, in one write, then sleeps until
  // the next one.
  tick() {
    this.timer = 0;
    if (this.paused) return;
    const now = this.pos;
    this.apply(now);
    if (this.finished) {
      this.base = this.duration;
      this.paused = true;
    } else {
      const wait = ((this.events[this.next][0] - now) / this.speed) * 1000;
      this.timer = setTimeout(() => this.tick(), Math.min(Math.max(wait, 0), 250));
    }
    this.onUpdate(this);
  }

  stop() {
    this.paused = true;
    clearTimeout(this.timer);
  }
}
