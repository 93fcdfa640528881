// kubelab's terminal: xterm.js (vendored under /static/vendor/xterm) over
// the terminal websocket. The server runs the real kubectl for the
// signed-in student; this file is the line editor around it: prompt,
// history, Tab completion from kubectl's own __complete, Ctrl-C.
//
// xterm.js is loaded only when a terminal is first shown, so the lesson
// pages do not carry it until the reader opens the dock.

const HISTORY_KEY = "kubelab-terminal-history";
const HISTORY_MAX = 200;
const PROMPT = "\x1b[1;32m$\x1b[0m ";

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
    else if (c === " ") start = i + 1;
  }
  return start;
}

function code(text) {
  const c = document.createElement("code");
  c.textContent = text;
  return c;
}

async function start(el) {
  if (el.dataset.started) return;
  el.dataset.started = "1";
  const screen = el.querySelector("[data-screen]");
  const status = el.querySelector("[data-status]");
  const who = el.querySelector("[data-who]");
  const stdin = el.querySelector("[data-stdin]");
  const ctrlc = el.querySelector("[data-ctrlc]");
  const clear = el.querySelector("[data-clear]");
  const L = el.dataset;
  const setStatus = (s) => { if (status.textContent !== s) status.textContent = s; };

  mirrorStyles(screen);
  await loadCSS(L.xtermCss);
  await loadScript(L.xterm);
  await loadScript(L.fit);
  const css = getComputedStyle(el);
  const term = new window.Terminal({
    convertEol: true,
    cursorBlink: true,
    fontFamily: css.getPropertyValue("--term-font").trim() || "monospace",
    fontSize: innerWidth < 600 ? 12 : 14,
    scrollback: 5000,
    theme: {
      background: css.getPropertyValue("--term-bg").trim(),
      foreground: css.getPropertyValue("--term-fg").trim(),
      cursor: css.getPropertyValue("--term-cursor").trim(),
      selectionBackground: css.getPropertyValue("--term-selection").trim(),
    },
  });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  // The screen is never narrower than kubectl's tables: on a phone it
  // scrolls sideways, as the site's code blocks do, rather than wrap
  // every row.
  const MIN_COLS = 80;
  const refit = () => {
    const d = fit.proposeDimensions();
    if (!d || !d.cols || !d.rows) return; // hidden
    const cols = Math.max(d.cols, MIN_COLS);
    if (cols !== term.cols || d.rows !== term.rows) term.resize(cols, d.rows);
  };
  refit();
  new ResizeObserver(refit).observe(screen);
  term.textarea?.setAttribute("aria-label", el.getAttribute("aria-label"));

  const history = loadHistory();
  let line = "", cursor = 0, hIdx = history.length, draft = "";
  let running = false, ws = null, completeID = 0, pendingComplete = 0;

  const redraw = () => {
    term.write("\r\x1b[K" + PROMPT + line);
    const back = line.length - cursor;
    if (back > 0) term.write(`\x1b[${back}D`);
  };
  const prompt = () => { line = ""; cursor = 0; hIdx = history.length; term.write(PROMPT); };
  // data-state (connecting, ready, running, closed) is for the page's
  // style and for tests.
  const setRunning = (r) => {
    running = r;
    ctrlc.disabled = !r;
    el.classList.toggle("is-running", r);
    el.dataset.state = r ? "running" : "ready";
    setStatus(r ? L.lRunning : L.lReady);
  };

  const send = (m) => { if (ws && ws.readyState === WebSocket.OPEN) { ws.send(JSON.stringify(m)); return true; } return false; };

  const connect = () => {
    setStatus(L.lConnecting);
    el.dataset.state = "connecting";
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(`${proto}//${location.host}/ui/ws/terminal`);
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      switch (m.t) {
        case "hello":
          pendingComplete = 0;
          who.replaceChildren(L.lAs + " ", code(m.user), ` · ${L.lIn} `, code(m.ns));
          setRunning(false);
          prompt();
          break;
        case "o":
        case "e":
          term.write(m.d);
          break;
        case "exit":
          setRunning(false);
          if (term.buffer.active.cursorX !== 0) term.write("\r\n");
          prompt();
          break;
        case "comp":
          if (m.id === pendingComplete) completed(m.items || []);
          break;
      }
    };
    ws.onclose = () => {
      const was = running;
      setRunning(false);
      setStatus(L.lClosed);
      el.dataset.state = "closed";
      if (was) term.write("\r\n");
      setTimeout(connect, 1500);
    };
  };

  const run = () => {
    const text = line.trim();
    term.write("\r\n");
    if (!text) { prompt(); return; }
    if (history[history.length - 1] !== text) history.push(text);
    saveHistory(history);
    // A command that reads -f - with nothing pasted: show where to paste
    // (kubectl itself will say there was nothing to read).
    if (!stdin.value && /(^|\s)(-f|--filename)(=|\s+)-(\s|$)/.test(text)) stdin.closest("details").open = true;
    if (!send({ t: "run", line: text, stdin: stdin.value })) { setStatus(L.lClosed); prompt(); return; }
    setRunning(true);
  };

  const interrupt = () => {
    if (running) { send({ t: "int" }); return; }
    term.write("^C\r\n");
    prompt();
  };

  const completed = (items) => {
    pendingComplete = 0;
    const head = line.slice(0, cursor), tail = line.slice(cursor);
    const ws0 = lastWordStart(head);
    const word = head.slice(ws0);
    const matches = items.filter((s) => s.startsWith(word));
    if (matches.length === 0) return;
    const ext = matches.length === 1 ? matches[0] + " " : commonPrefix(matches);
    if (ext.length > word.length) {
      line = head.slice(0, ws0) + ext + tail;
      cursor = ws0 + ext.length;
      redraw();
      return;
    }
    // Nothing more in common: list them, as a shell does on a second Tab.
    const width = Math.max(...matches.map((s) => s.length)) + 2;
    const cols = Math.max(1, Math.floor(term.cols / width));
    let out = "";
    matches.forEach((s, i) => { out += s.padEnd(width); if ((i + 1) % cols === 0) out += "\r\n"; });
    term.write("\r\n" + out.trimEnd() + "\r\n");
    redraw();
  };

  term.onData((data) => {
    if (data === "\x03") { interrupt(); return; }
    if (running) return; // no type-ahead: the command reads the stdin box, not the keyboard
    switch (data) {
      case "\r": run(); return;
      case "\x7f": case "\b":
        if (cursor > 0) { line = line.slice(0, cursor - 1) + line.slice(cursor); cursor--; redraw(); }
        return;
      case "\x1b[3~":
        if (cursor < line.length) { line = line.slice(0, cursor) + line.slice(cursor + 1); redraw(); }
        return;
      case "\x1b[D": if (cursor > 0) { cursor--; term.write(data); } return;
      case "\x1b[C": if (cursor < line.length) { cursor++; term.write(data); } return;
      case "\x1b[H": case "\x01": cursor = 0; redraw(); return;
      case "\x1b[F": case "\x05": cursor = line.length; redraw(); return;
      case "\x15": line = line.slice(cursor); cursor = 0; redraw(); return;
      case "\x0c": term.clear(); redraw(); return;
      case "\x1b[A":
        if (hIdx > 0) { if (hIdx === history.length) draft = line; hIdx--; line = history[hIdx]; cursor = line.length; redraw(); }
        return;
      case "\x1b[B":
        if (hIdx < history.length) { hIdx++; line = hIdx === history.length ? draft : history[hIdx]; cursor = line.length; redraw(); }
        return;
      case "\t":
        // The server answers one Tab at a time and drops the others.
        if (pendingComplete) return;
        pendingComplete = ++completeID;
        send({ t: "complete", id: pendingComplete, line: line.slice(0, cursor) });
        return;
    }
    if (data.startsWith("\x1b")) return; // other keys: nothing to do
    // Typed or pasted text: one line (a paste's newlines become spaces;
    // multi-line input belongs in the stdin box).
    const text = data.replace(/\r\n|\r|\n/g, " ").replace(/[\x00-\x1f]/g, "");
    line = line.slice(0, cursor) + text + line.slice(cursor);
    cursor += text.length;
    redraw();
  });

  ctrlc.addEventListener("click", () => { interrupt(); term.focus(); });
  clear.addEventListener("click", () => { term.clear(); term.focus(); });
  connect();
  if (el.hasAttribute("data-autostart")) term.focus();
}

for (const el of document.querySelectorAll("[data-terminal]")) {
  const dock = el.closest("[data-terminal-dock]");
  if (!dock || el.hasAttribute("data-autostart")) {
    start(el);
  } else {
    const open = () => { if (dock.open) start(el); };
    dock.addEventListener("toggle", open);
    open();
  }
}

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
