// The key bar: the keys a phone's on-screen keyboard lacks (Esc, Tab, a
// sticky Ctrl, the arrows, and | ~ / which hide behind its symbol pages),
// under the terminal on touch and narrow screens. Its keys go through
// term.input, the same path as typed keys: xterm's onData, so a read-only
// page (disableStdin) sends nothing, and whatever else watches typed input
// sees them too.

const ESC = '\x1b';

// xterm's modifier parameter for Ctrl in CSI 1;5X sequences.
const arrows = { left: 'D', up: 'A', right: 'C', down: 'B' };

// arrowSeq is what a keyboard's arrow sends: SS3 in the terminal's
// application cursor mode (DECCKM, vi and less turn it on), CSI otherwise,
// and CSI 1;5 with Ctrl.
function arrowSeq(term, dir, ctrl) {
  const f = arrows[dir];
  if (ctrl) return `${ESC}[1;5${f}`;
  const app = term.modes && term.modes.applicationCursorKeysMode;
  return app ? `${ESC}O${f}` : `${ESC}[${f}`;
}

// ctrlOf is the control character Ctrl+ch sends on a keyboard, or '' when
// Ctrl does nothing to ch (the character is then sent as it is).
export function ctrlOf(ch) {
  if (ch.length !== 1) return '';
  const c = ch.charCodeAt(0);
  if (c >= 0x61 && c <= 0x7a) return String.fromCharCode(c - 0x60); // a-z
  if (c >= 0x40 && c <= 0x5f) return String.fromCharCode(c - 0x40); // @ A-Z [ \ ] ^ _
  switch (ch) {
    case ' ': case '2': return '\x00';
    case '3': return '\x1b';
    case '4': case '|': return '\x1c';
    case '5': return '\x1d';
    case '6': case '~': return '\x1e';
    case '7': case '/': case '-': return '\x1f';
    case '8': case '?': return '\x7f';
  }
  return '';
}

// The bar's keys: label, what it sends (a function of the terminal and
// whether Ctrl is pending), a title for people and screen readers.
const keys = [
  { id: 'esc', label: 'Esc', title: 'Escape', send: () => ESC },
  { id: 'tab', label: 'Tab', title: 'Tab (completes in a shell)', send: () => '\t' },
  { id: 'ctrl', label: 'Ctrl', title: 'Ctrl: the next key is sent with Ctrl (Ctrl, then c interrupts)', sticky: true },
  { id: 'left', repeat: true, label: '←', title: 'Left arrow', send: (t, c) => arrowSeq(t, 'left', c) },
  { id: 'up', repeat: true, label: '↑', title: 'Up arrow (the previous command in a shell)', send: (t, c) => arrowSeq(t, 'up', c) },
  { id: 'down', repeat: true, label: '↓', title: 'Down arrow', send: (t, c) => arrowSeq(t, 'down', c) },
  { id: 'right', repeat: true, label: '→', title: 'Right arrow', send: (t, c) => arrowSeq(t, 'right', c) },
  { id: 'pipe', label: '|', title: 'Vertical bar', char: '|' },
  { id: 'tilde', label: '~', title: 'Tilde', char: '~' },
  { id: 'slash', label: '/', title: 'Slash', char: '/' },
];

const storeKey = 'termgate.keybar';

// wantedByDefault: shown where a keyboard is likely missing (a touch
// screen, or a window too narrow for a desktop), unless the user chose.
function wantedByDefault() {
  const saved = localStorage.getItem(storeKey);
  if (saved === 'on' || saved === 'off') return saved === 'on';
  return matchMedia('(pointer: coarse)').matches || matchMedia('(max-width: 700px)').matches;
}

// setupKeyBar fills bar (an empty element) with the keys and wires toggle
// (a button that shows or hides it). It returns filter, which the page's
// typed-input handler applies to every chunk of typed input: it turns the
// first character typed after a sticky Ctrl into its control character.
export function setupKeyBar(term, bar, toggle) {
  let ctrl = false;
  const buttons = {};
  const setCtrl = (on) => {
    ctrl = on;
    buttons.ctrl.classList.toggle('on', on);
    buttons.ctrl.setAttribute('aria-pressed', String(on));
  };
  for (const k of keys) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = k.label;
    b.title = k.title;
    b.setAttribute('aria-label', k.title);
    b.dataset.key = k.id;
    // Keep the focus in the terminal: a phone's keyboard stays open.
    b.addEventListener('mousedown', (e) => e.preventDefault());
    const press = () => {
      if (k.sticky) return setCtrl(!ctrl);
      if (k.char) return term.input(k.char, true); // filter applies a pending Ctrl
      const seq = k.send(term, ctrl);
      setCtrl(false);
      term.input(seq, true);
    };
    let repeated = false;
    b.addEventListener('click', () => {
      if (repeated) repeated = false; // the hold already sent it
      else press();
    });
    b.addEventListener('pointerdown', () => { repeated = false; });
    if (k.repeat) holdToRepeat(b, () => { repeated = true; press(); });
    buttons[k.id] = b;
    bar.append(b);
  }
  buttons.ctrl.setAttribute('aria-pressed', 'false');
  bar.addEventListener('contextmenu', (e) => e.preventDefault()); // a long press repeats, no menu

  const show = (on, remember) => {
    bar.hidden = !on;
    toggle.setAttribute('aria-pressed', String(on));
    toggle.classList.toggle('on', on);
    if (remember) localStorage.setItem(storeKey, on ? 'on' : 'off');
    if (!on) setCtrl(false);
  };
  show(wantedByDefault(), false);
  toggle.addEventListener('mousedown', (e) => e.preventDefault());
  toggle.addEventListener('click', () => show(bar.hidden, true));

  followVisualViewport();

  window.termgateKeyBar = { get ctrl() { return ctrl; } }; // for the browser test
  return (d) => {
    // Escape sequences pass: xterm answers the shell's queries (busybox
    // asks where the cursor is after each Enter) through the same path.
    if (!ctrl || (d.length > 1 && d[0] === ESC)) return d;
    setCtrl(false);
    const c = ctrlOf(d[0]);
    return c ? c + d.slice(1) : d;
  };
}

// holdToRepeat calls fire while the button is held, as a keyboard repeats
// a held arrow: first after 400 ms, then every 60 ms.
function holdToRepeat(b, fire) {
  let timer = 0;
  const stop = () => {
    clearTimeout(timer);
    clearInterval(timer);
    timer = 0;
  };
  b.addEventListener('pointerdown', () => {
    stop();
    timer = setTimeout(() => {
      fire();
      timer = setInterval(fire, 60);
    }, 400);
  });
  for (const ev of ['pointerup', 'pointerleave', 'pointercancel']) b.addEventListener(ev, stop);
}

// followVisualViewport keeps the page within what is visible above a
// phone's on-screen keyboard, which shrinks the visual viewport but not
// the layout one: the terminal (and the key bar under it) then resize with
// the keyboard instead of hiding behind it.
function followVisualViewport() {
  const vv = window.visualViewport;
  if (!vv) return;
  const root = document.documentElement;
  const apply = () => {
    const h = Math.round(vv.height);
    // A pinch zoom shrinks the visual viewport too: that is no keyboard.
    if (vv.scale > 1.01 || h >= window.innerHeight - 1) {
      root.style.removeProperty('--vv-height');
      return;
    }
    root.style.setProperty('--vv-height', `${h}px`);
    // Safari scrolls the page to show the focused input: keep it at the top.
    window.scrollTo(0, 0);
  };
  // Both: the layout viewport changes without the visual one (a phone
  // applying the page's viewport width after the first layout) and the
  // other way round (the keyboard).
  vv.addEventListener('resize', apply);
  window.addEventListener('resize', apply);
  apply();
}
