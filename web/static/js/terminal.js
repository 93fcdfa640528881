// kubelab's terminal: xterm.js (vendored under /static/vendor/xterm) over
// the terminal websocket. The server runs the real kubectl for the
// signed-in student; this file is the line editor around it (prompt,
// wrapped and multi-line editing, history, Tab completion from kubectl's
// own __complete, Ctrl-C), the terminal's tabs, each a websocket and a
// scratch directory of its own, and the "paste into terminal" that the
// command blocks of the lesson and the labs send.
//
// xterm.js is loaded only when a terminal is first shown, so the lesson
// pages do not carry it until the reader opens the terminal.

import { h } from "./live.js";

const HISTORY_KEY = "kubelab-terminal-history";
const HISTORY_MAX = 200;
const DOCK_KEY = "kubelab-terminal-dock";
const MAX_TABS = 4;
const PROMPT = "\x1b[1;32m$\x1b[0m ";
const CONTINUED = "\x1b[2m>\x1b[0m ";
const PROMPT_WIDTH = 2; // "$ " and "> " as the screen shows them
// Below this width (a phone) the screen's type is smaller.
const PHONE = 600;

const loading = new Map();

function loadScript(src) {
  if (!loading.has(src)) {
    loading.set(src, new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not load " + src));
      document.head.append(s);
    }));
  }
  return loading.get(src);
}

function loadCSS(href) {
  if (!loading.has(href)) {
    const l = document.createElement("link");
    l.rel = "stylesheet";
    l.href = href;
    document.head.append(l);
    loading.set(href, Promise.resolve());
  }
  return loading.get(href);
}

// The site's CSP allows no inline <style>, and xterm.js writes its
// renderer's rules (sizes, colours) into <style> elements, which the
// browser then ignores. This mirrors each such element into a
// constructed stylesheet, which the CSP does not govern because no markup
// is parsed: the rules are xterm's own, unchanged.
const mirrored = new WeakMap();
function mirrorStyles(root) {
  if (!("adoptedStyleSheets" in document)) return;
  const sync = (el) => {
    let sheet = mirrored.get(el);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      mirrored.set(el, sheet);
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    }
    try { sheet.replaceSync(el.textContent || ""); } catch { /* not CSS */ }
  };
  const scan = () => root.querySelectorAll("style").forEach(sync);
  new MutationObserver(scan).observe(root, { subtree: true, childList: true, characterData: true });
  scan();
}

function loadHistory() {
  try { return JSON.parse(localStorage.getItem(HISTORY_KEY)) || []; } catch { return []; }
}

function saveHistory(h) {
  try { localStorage.setItem(HISTORY_KEY, JSON.stringify(h.slice(-HISTORY_MAX))); } catch { /* private mode */ }
}

// commonPrefix is what every completion starts with.
function commonPrefix(items) {
  if (items.length === 0) return "";
  let p = items[0];
  for (const s of items) {
    while (!s.startsWith(p)) p = p.slice(0, -1);
  }
  return p;
}

// lastWordStart is where the word under completion begins (after the
// last unquoted space).
function lastWordStart(s) {
  let q = "", start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) { if (c === q) q = ""; continue; }
    if (c === "'" || c === '"') q = c;
    else if (c === " " || c === "\n") start = i + 1;
  }
  return start;
}

// The line is edited as a list of what the reader sees as one character
// (a Thai consonant with its vowel and tone marks is one), so that the
// cursor never stops inside one.
const graphemes = typeof Intl !== "undefined" && Intl.Segmenter
  ? ((seg) => (s) => Array.from(seg.segment(s), (x) => x.segment))(new Intl.Segmenter(undefined, { granularity: "grapheme" }))
  : (s) => Array.from(s);

// cellWidth is how many of the screen's columns a character takes, as
// xterm.js counts them: marks and joiners none, East Asian wide
// characters and most emoji two.
function cellWidth(g) {
  let w = 0;
  for (const ch of g) {
    const cp = ch.codePointAt(0);
    if (cp < 0x300) { w += 1; continue; }
    if (/[\p{M}\u200b-\u200f\ufeff]/u.test(ch)) continue;
    const wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf && cp !== 0x303f) ||
      (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
      (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
      (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
    w += wide ? 2 : 1;
  }
  return w;
}

// render lays the prompt and the line out as the screen wraps them at
// cols: the text to write from the prompt's first column, where each
// position of the line is (row from the prompt's row, column), and the
// row the text ends on. A line of the buffer after a newline starts with
// the continuation prompt. A row filled to its last column leaves the
// cursor waiting at its end; the text then moves on to the next row
// itself, so that every position has a cell of its own.
function render(chars, cols) {
  let out = PROMPT, row = 0, col = PROMPT_WIDTH;
  const pos = new Array(chars.length + 1);
  const breakRow = () => { out += "\r\n"; row++; col = 0; };
  for (let i = 0; i < chars.length; i++) {
    const g = chars[i];
    if (g === "\n") {
      if (col >= cols) breakRow();
      pos[i] = [row, col];
      out += "\r\n" + CONTINUED;
      row++;
      col = PROMPT_WIDTH;
      continue;
    }
    const w = cellWidth(g);
    if (col + w > cols) { row++; col = 0; } // the terminal wraps by itself
    pos[i] = [row, col];
    out += g;
    col += w;
  }
  if (col >= cols) breakRow();
  pos[chars.length] = [row, col];
  return { out, pos, endRow: row };
}

// needsMore says whether Enter should go on to a next line rather than
// run: a quote still open, a backslash at the end, or a heredoc whose
// closing word has not come, as a shell's second prompt does.
function needsMore(text) {
  let q = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (q === "'") { if (c === "'") q = ""; continue; }
    if (c === "\\") { if (++i >= text.length) return true; continue; }
    if (q === '"') { if (c === '"') q = ""; continue; }
    if (c === "'" || c === '"') q = c;
  }
  if (q) return true;
  const open = [];
  for (const line of text.split("\n")) {
    if (open.length) {
      if ((open[0].dash ? line.replace(/^\t+/, "") : line) === open[0].word) open.shift();
      continue;
    }
    for (const m of line.matchAll(/(?<!<)<<(-?)[ \t]*(['"]?)([A-Za-z_][\w-]*)\2/g)) open.push({ dash: m[1] === "-", word: m[3] });
  }
  return open.length > 0;
}

// pasted turns what the clipboard or an input method gives into the
// line's text: newlines kept (a paste of several lines is edited, then
// run with Enter, as a shell with bracketed paste does), tabs as spaces,
// other control characters dropped.
function pasted(data) {
  return data.replace(/\r\n|\r/g, "\n").replace(/\t/g, "    ").replace(/[\x00-\x09\x0b-\x1f\x7f]/g, "");
}

// wordStart is where Ctrl-W's word, the one before i, begins.
function wordStart(chars, i) {
  while (i > 0 && /\s/.test(chars[i - 1])) i--;
  while (i > 0 && !/\s/.test(chars[i - 1])) i--;
  return i;
}

// A Session is one tab: a screen, a websocket, the line being edited.
class Session {
  constructor(box, n) {
    this.box = box;
    this.n = n;
    this.state = "connecting";
    this.who = null;
    this.chars = [];
    this.cursor = 0;
    this.cursorRow = 0;
    this.hIdx = 0;
    this.draft = [];
    this.running = false;
    this.completeID = 0;
    this.pendingComplete = 0;
    this.escaped = false;
    this.lastCommand = "";
    this.queued = "";
    this.closed = false;

    const id = `${box.id}-tab-${n}`;
    this.tab = h("button", { type: "button", role: "tab", id, class: "term-tab", "aria-controls": id + "-panel", "aria-selected": "false", tabindex: "-1" });
    this.panel = h("div", { role: "tabpanel", id: id + "-panel", class: "term-panel", "aria-labelledby": id, hidden: true });
    box.tablist.append(this.tab);
    box.screen.append(this.panel);
    this.tab.addEventListener("click", () => box.select(this));
    this.label();

    const css = getComputedStyle(box.el);
    this.term = new window.Terminal({
      convertEol: true,
      cursorBlink: true,
      fontFamily: css.getPropertyValue("--term-font").trim() || "monospace",
      fontSize: innerWidth < PHONE ? 12 : 14,
      scrollback: 5000,
      theme: {
        background: css.getPropertyValue("--term-bg").trim(),
        foreground: css.getPropertyValue("--term-fg").trim(),
        cursor: css.getPropertyValue("--term-cursor").trim(),
        selectionBackground: css.getPropertyValue("--term-selection").trim(),
      },
    });
    this.fit = new window.FitAddon.FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.panel);
    this.term.textarea?.setAttribute("aria-label", `${box.el.getAttribute("aria-label")} ${n}`);
    // Pastes arrive marked, so that their newlines are kept rather than
    // taken as Enter.
    this.term.write("\x1b[?2004h");
    this.term.attachCustomKeyEventHandler((ev) => this.key(ev));
    this.term.onData((data) => this.input(data));
    this.term.onResize(() => { this.cursorRow = this.layout().pos[this.cursor][0]; });
    this.connect();
  }

  // label is the tab's name: its number, and the command it last ran.
  label() {
    const cmd = this.lastCommand.length > 28 ? this.lastCommand.slice(0, 27) + "…" : this.lastCommand;
    this.tab.replaceChildren(...[h("span", { class: "term-tab-n" }, String(this.n)), cmd && h("span", { class: "term-tab-cmd" }, cmd),
      this.running && h("span", { class: "term-tab-state" }, this.box.L.lRunning)].filter(Boolean));
    this.tab.title = this.lastCommand;
  }

  refit() {
    if (this.panel.hidden) return;
    const d = this.fit.proposeDimensions();
    if (!d || !d.cols || !d.rows) return; // hidden
    // The screen fits its box, beside the lesson and on a phone too: a
    // screen wider than its box would hide the end of every long line.
    if (d.cols !== this.term.cols || d.rows !== this.term.rows) this.term.resize(d.cols, d.rows);
  }

  layout() { return render(this.chars, this.term.cols); }

  // redraw writes the prompt and the line again from the prompt's first
  // row, and puts the cursor where it is in the line.
  redraw() {
    let out = this.cursorRow > 0 ? `\x1b[${this.cursorRow}A` : "";
    const { out: text, pos, endRow } = this.layout();
    out += "\r\x1b[J" + text;
    const [row, col] = pos[this.cursor];
    if (endRow > row) out += `\x1b[${endRow - row}A`;
    out += "\r" + (col > 0 ? `\x1b[${col}C` : "");
    this.cursorRow = row;
    this.term.write(out);
  }

  // below moves the cursor under the line's last row, for what is
  // written next (output, a list of completions).
  below() {
    const { endRow } = this.layout();
    const down = endRow - this.cursorRow;
    this.term.write((down > 0 ? `\x1b[${down}B` : "") + "\r\n");
    this.cursorRow = 0;
  }

  prompt() {
    this.chars = [];
    this.cursor = 0;
    this.cursorRow = 0;
    this.hIdx = this.box.history.length;
    this.redraw();
  }

  insert(text) {
    const add = graphemes(pasted(text));
    this.chars.splice(this.cursor, 0, ...add);
    this.cursor += add.length;
    this.redraw();
  }

  setLine(text) {
    this.chars = graphemes(text);
    this.cursor = this.chars.length;
    this.redraw();
  }

  setState(state) {
    this.state = state;
    this.running = state === "running";
    this.label();
    this.box.update(this);
  }

  send(m) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.ws.send(JSON.stringify(m)); return true; }
    return false;
  }

  connect() {
    if (this.closed) return;
    this.setState("connecting");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/ui/ws/terminal`);
    this.ws = ws;
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      switch (m.t) {
        case "hello":
          this.pendingComplete = 0;
          this.who = { user: m.user, ns: m.ns };
          this.setState("ready");
          this.prompt();
          if (this.queued) { this.insert(this.queued); this.queued = ""; }
          break;
        case "o":
        case "e":
          if (m.d) this.term.write(m.d);
          break;
        case "exit":
          this.setState("ready");
          if (this.term.buffer.active.cursorX !== 0) this.term.write("\r\n");
          this.prompt();
          break;
        case "comp":
          if (m.id === this.pendingComplete) this.completed(m.items || []);
          break;
      }
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      const was = this.running;
      this.setState("closed");
      if (was) this.term.write("\r\n");
      if (!this.closed) setTimeout(() => this.connect(), 1500);
    };
  }

  close() {
    this.closed = true;
    this.ws?.close();
    this.term.dispose();
    this.tab.remove();
    this.panel.remove();
  }

  run() {
    const text = this.chars.join("").trim();
    this.below();
    if (!text) { this.prompt(); return; }
    const history = this.box.history;
    if (history[history.length - 1] !== text) history.push(text);
    saveHistory(history);
    this.lastCommand = text.split("\n")[0];
    // A command that reads -f - with nothing pasted: show where to paste
    // (kubectl itself will say there was nothing to read).
    const stdin = this.box.stdin;
    if (!stdin.value && !text.includes("<<") && /(^|\s)(-f|--filename)(=|\s+)-(\s|$)/.test(text)) stdin.closest("details").open = true;
    if (!this.send({ t: "run", line: text, stdin: stdin.value })) { this.setState("closed"); this.prompt(); return; }
    this.setState("running");
  }

  interrupt() {
    if (this.running) { this.send({ t: "int" }); return; }
    this.below();
    this.term.write("^C\r\n");
    this.prompt();
  }

  completed(items) {
    this.pendingComplete = 0;
    const head = this.chars.slice(0, this.cursor).join("");
    const ws0 = lastWordStart(head);
    const word = head.slice(ws0);
    const matches = items.filter((s) => s.startsWith(word));
    if (matches.length === 0) return;
    const ext = matches.length === 1 ? matches[0] + " " : commonPrefix(matches);
    if (ext.length > word.length) {
      this.insert(ext.slice(word.length));
      return;
    }
    // Nothing more in common: list them, as a shell does on a second Tab.
    const width = Math.max(...matches.map((s) => s.length)) + 2;
    const cols = Math.max(1, Math.floor(this.term.cols / width));
    let out = "";
    matches.forEach((s, i) => { out += s.padEnd(width); if ((i + 1) % cols === 0) out += "\r\n"; });
    this.below();
    this.term.write(out.trimEnd() + "\r\n");
    this.redraw();
  }

  // key decides which keys xterm.js takes. Esc, then Tab or Shift+Tab,
  // leaves the terminal, as the page's other controls are reached by Tab
  // (WCAG 2.1.2); Tab alone completes.
  key(ev) {
    if (ev.type !== "keydown") return true;
    if (ev.key === "Escape") { this.escaped = true; return true; }
    if (ev.key === "Tab" && this.escaped) { this.escaped = false; return false; }
    if (!["Shift", "Control", "Alt", "Meta"].includes(ev.key)) this.escaped = false;
    return true;
  }

  move(to) {
    this.cursor = Math.max(0, Math.min(this.chars.length, to));
    this.redraw();
  }

  history(step) {
    const history = this.box.history;
    const to = this.hIdx + step;
    if (to < 0 || to > history.length) return;
    if (this.hIdx === history.length) this.draft = this.chars;
    this.hIdx = to;
    if (to === history.length) { this.chars = this.draft; this.cursor = this.chars.length; this.redraw(); } else this.setLine(history[to]);
  }

  input(data) {
    if (data === "\x03") { this.interrupt(); return; }
    if (this.running) return; // no type-ahead: the command reads the stdin box, not the keyboard
    const c = this.chars;
    switch (data) {
      case "\r":
        if (needsMore(c.join(""))) { this.move(c.length); this.insert("\n"); } else this.run();
        return;
      case "\x7f": case "\b":
        if (this.cursor > 0) { c.splice(this.cursor - 1, 1); this.move(this.cursor - 1); }
        return;
      case "\x1b[3~": case "\x04":
        if (this.cursor < c.length) { c.splice(this.cursor, 1); this.redraw(); }
        return;
      case "\x1b[D": case "\x02": this.move(this.cursor - 1); return;
      case "\x1b[C": case "\x06": this.move(this.cursor + 1); return;
      case "\x1b[H": case "\x1bOH": case "\x01": this.move(0); return;
      case "\x1b[F": case "\x1bOF": case "\x05": this.move(c.length); return;
      case "\x15": c.splice(0, this.cursor); this.move(0); return;
      case "\x0b": c.splice(this.cursor); this.redraw(); return;
      case "\x17": { const from = wordStart(c, this.cursor); c.splice(from, this.cursor - from); this.move(from); return; }
      case "\x0c":
        this.term.clear();
        this.term.write("\x1b[H\x1b[2J");
        this.cursorRow = 0;
        this.redraw();
        return;
      case "\x1b[A": this.history(-1); return;
      case "\x1b[B": this.history(1); return;
      case "\t":
        // The server answers one Tab at a time and drops the others.
        if (this.pendingComplete) return;
        this.pendingComplete = ++this.completeID;
        this.send({ t: "complete", id: this.pendingComplete, line: c.slice(0, this.cursor).join("") });
        return;
    }
    if (data.startsWith("\x1b[200~")) { this.insert(data.slice(6).replace(/\x1b\[201~$/, "")); return; }
    if (data.startsWith("\x1b")) return; // other keys: nothing to do
    this.insert(data);
  }
}

// A Box is one terminal on the page, with its tabs and its buttons.
let boxes = 0;
class Box {
  constructor(el) {
    this.el = el;
    this.id = el.id || `term${++boxes}`;
    this.L = el.dataset;
    this.screen = el.querySelector("[data-screen]");
    this.tablist = el.querySelector("[data-tabs]");
    this.status = el.querySelector("[data-status]");
    this.whoEl = el.querySelector("[data-who]");
    this.stdin = el.querySelector("[data-stdin]");
    this.ctrlc = el.querySelector("[data-ctrlc]");
    this.newTab = el.querySelector("[data-newtab]");
    this.closeTab = el.querySelector("[data-closetab]");
    this.full = el.querySelector("[data-full]");
    this.history = loadHistory();
    this.sessions = [];
    this.active = null;
    this.numbered = 0;
  }

  async start() {
    const L = this.L;
    mirrorStyles(this.screen);
    await loadCSS(L.xtermCss);
    await loadScript(L.xterm);
    await loadScript(L.fit);
    this.open();
    new ResizeObserver(() => this.active?.refit()).observe(this.screen);
    this.ctrlc.addEventListener("click", () => { this.active.interrupt(); this.active.term.focus(); });
    this.el.querySelector("[data-clear]").addEventListener("click", () => { this.active.input("\x0c"); this.active.term.focus(); });
    this.newTab.addEventListener("click", () => this.open());
    this.closeTab.addEventListener("click", () => this.close(this.active));
    this.full.addEventListener("click", () => this.fullScreen(!this.el.classList.contains("is-full")));
    this.el.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && this.el.classList.contains("is-full") && ev.target === this.full) this.fullScreen(false);
    });
    // Left and Right move along the tabs, as ARIA's tab pattern asks.
    this.tablist.addEventListener("keydown", (ev) => {
      const i = this.sessions.indexOf(this.active);
      const to = { ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: this.sessions.length - 1 }[ev.key];
      if (to === undefined) return;
      ev.preventDefault();
      const s = this.sessions[(to + this.sessions.length) % this.sessions.length];
      this.select(s, false);
      s.tab.focus();
    });
    if (this.el.hasAttribute("data-autostart")) this.active.term.focus();
  }

  open() {
    if (this.sessions.length >= MAX_TABS) return this.active;
    const s = new Session(this, ++this.numbered);
    this.sessions.push(s);
    this.select(s);
    return s;
  }

  close(s) {
    if (this.sessions.length < 2) return;
    const i = this.sessions.indexOf(s);
    this.sessions.splice(i, 1);
    s.close();
    this.select(this.sessions[Math.min(i, this.sessions.length - 1)]);
  }

  select(s, focus = true) {
    this.active = s;
    for (const o of this.sessions) {
      const on = o === s;
      o.tab.setAttribute("aria-selected", String(on));
      o.tab.tabIndex = on ? 0 : -1;
      o.panel.hidden = !on;
    }
    s.refit();
    this.update(s);
    if (focus) s.term.focus();
  }

  fullScreen(on) {
    this.el.classList.toggle("is-full", on);
    document.documentElement.classList.toggle("term-full", on);
    this.full.setAttribute("aria-pressed", String(on));
    this.full.textContent = on ? this.L.lFullExit : this.L.lFull;
    requestAnimationFrame(() => { this.active.refit(); this.active.term.focus(); });
  }

  // update shows the active tab's state: data-state (connecting, ready,
  // running, closed) is for the page's style and for tests.
  update(s) {
    this.newTab.disabled = this.sessions.length >= MAX_TABS;
    this.closeTab.disabled = this.sessions.length < 2;
    this.tablist.hidden = this.sessions.length < 2;
    if (s !== this.active) return;
    const L = this.L;
    this.el.dataset.state = s.state;
    this.el.classList.toggle("is-running", s.running);
    this.ctrlc.disabled = !s.running;
    const text = { connecting: L.lConnecting, ready: L.lReady, running: L.lRunning, closed: L.lClosed }[s.state];
    if (this.status.textContent !== text) this.status.textContent = text;
    if (s.who) this.whoEl.replaceChildren(L.lAs + " ", h("code", {}, s.who.user), ` · ${L.lIn} `, h("code", {}, s.who.ns));
  }

  // paste puts text on the active tab's line, for the reader to run.
  paste(text) {
    const s = this.active;
    s.term.focus();
    if (s.running) return;
    // Before the server's hello, the line is not there yet: the hello's
    // prompt puts the text on it.
    if (s.state === "ready") s.insert(text); else s.queued = (s.queued || "") + text;
  }
}

const started = new WeakMap();
function start(el) {
  if (!started.has(el)) {
    const box = new Box(el);
    started.set(el, box.start().then(() => box));
  }
  return started.get(el);
}

for (const el of document.querySelectorAll("[data-terminal]")) {
  const dock = el.closest("[data-terminal-dock]");
  if (!dock || el.hasAttribute("data-autostart")) {
    start(el);
    continue;
  }
  // The dock stays open from page to page once the reader opens it.
  try { if (localStorage.getItem(DOCK_KEY) === "open" && !dock.open) dock.open = true; } catch { /* private mode */ }
  const toggled = () => {
    try { localStorage.setItem(DOCK_KEY, dock.open ? "open" : "closed"); } catch { /* private mode */ }
    if (dock.open) start(el).then((box) => box.active.refit());
  };
  dock.addEventListener("toggle", toggled);
  if (dock.open) start(el);
}

// "Paste into terminal" on a command block: the page's terminal gets the
// command on its line, not run; the reader reads it and presses Enter.
document.addEventListener("kubelab:paste", async (ev) => {
  const el = document.querySelector("[data-terminal]");
  if (!el) return;
  const dock = el.closest("[data-terminal-dock]");
  if (dock && !dock.open) dock.open = true;
  const box = await start(el);
  box.el.scrollIntoView({ block: "nearest" });
  box.paste(ev.detail);
});

for (const b of document.querySelectorAll("[data-copy]")) {
  const label = b.textContent;
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(b.dataset.copy);
      b.textContent = b.dataset.lCopied;
      setTimeout(() => { b.textContent = label; }, 1500);
    } catch { /* no clipboard: the text is on the page to select */ }
  });
}

