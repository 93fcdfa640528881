// A websocket to kubelab that reconnects by itself, with backoff, and says
// so: the view's status badge reads live, reconnecting or connecting.

/** h builds an element; strings become text nodes, never HTML. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** svg builds an SVG element with attributes. */
export function svg(tag, attrs, text) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text != null) el.textContent = String(text);
  return el;
}

// The scripts' words come from the server's one catalogue, in the page's
// language (web/i18n.go, keys "js.…"): the layout puts them in the page.
const words = JSON.parse(document.getElementById("kubelab-words")?.textContent || "{}");
export const lang = document.documentElement.lang === "th" ? "th" : "en";
// say is the word k, its {name}s filled in from args.
export const say = (k, args = {}) => (words[k] ?? k).replace(/\{(\w+)\}/g, (m, n) => (n in args ? String(args[n]) : m));

/**
 * connect opens path (with query from params(), called at each attempt, so
 * a view resumes from its last resourceVersion) and calls onMessage with
 * each parsed message. It reconnects after a drop unless stopped.
 */
export function connect(path, { params = () => ({}), onMessage, onOpen, onClose, badge }) {
  let ws = null, stopped = false, attempt = 0, timer = 0;
  const setBadge = (cls, text) => {
    if (!badge) return;
    badge.className = "conn " + cls;
    badge.textContent = text;
  };
  const open = () => {
    const q = new URLSearchParams(params());
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path + "?" + q;
    setBadge("", say("connecting"));
    ws = new WebSocket(url);
    ws.onopen = () => { attempt = 0; setBadge("live", say("live")); onOpen && onOpen(); };
    ws.onmessage = (e) => { try { onMessage(JSON.parse(e.data)); } catch (err) { console.error(err); } };
    ws.onclose = (e) => {
      ws = null;
      onClose && onClose(e);
      if (stopped) { setBadge("down", say("down")); return; }
      // 1013: the server closed us for falling behind; come back at once.
      const delay = e.code === 1013 ? 100 : Math.min(10000, 500 * 2 ** attempt++);
      setBadge("down", say("reconnecting", { n: Math.ceil(delay / 1000) }) + (e.reason ? " · " + e.reason : ""));
      timer = setTimeout(open, delay);
    };
  };
  open();
  return {
    send: (m) => ws && ws.readyState === 1 && ws.send(JSON.stringify(m)),
    stop: () => {
      stopped = true;
      clearTimeout(timer);
      if (ws) {
        // Let the socket finish closing on its own; this view is done with it.
        const w = ws;
        ws = null;
        w.onclose = w.onmessage = null;
        w.close(1000, "stopped");
        onClose && onClose({ code: 1000, reason: "stopped" });
      }
      setBadge("down", say("down"));
    },
    restart: () => { stopped = false; clearTimeout(timer); if (!ws) open(); },
  };
}

/** post sends JSON to kubelab and returns the parsed answer. */
export async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}), credentials: "same-origin" });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.message || r.status + " " + r.statusText);
  return data;
}
