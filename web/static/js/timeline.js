// The watch timeline: etcd's revision as a clock, two watchers of the
// reader's pods as lanes, their events as marks, and both places where
// history ends: the pods watch cache's window (a watch from before its
// start gets "too old resource version") and etcd's compacted revision
// (an exact list from before it gets etcd's own 410). Watcher B can be
// paused; what it misses is drawn on its lane, and once the window has
// moved past it, resuming it gets the real 410 and a relist.
import { connect, h, svg, post, say as word } from "./live.js";

const MAX_MARKS = 80;

const say = {
  paused: word("tl.paused"), watcher: word("tl.watcher"), now: word("tl.now"), window: word("tl.window"), etcd: word("tl.etcd"),
  windowText: (start, kept, capacity, age, fresh) => word("tl.windowText", { start, kept, capacity, age, fresh }),
  nothingCompacted: word("tl.nothingCompacted"),
  compactedText: (rv) => word("tl.compactedText", { rv }),
  bLive: word("tl.bLive"),
  bPaused: (rv) => word("tl.bPaused", { rv }),
  bWait: (rv, fresh) => word("tl.bWait", { rv, fresh }),
  left: (s) => word("tl.left", { s }),
  bReady: (rv) => word("tl.bReady", { rv }),
  bPast: (rv, start) => word("tl.bPast", { rv, start }),
  push: (n, start, past) => word(past ? "tl.pushPast" : "tl.pushShort", { n, start }),
  pushFailed: word("tl.pushFailed"),
  compact: (rv) => word("tl.compact", { rv }),
  compactFailed: word("tl.compactFailed"),
  labelFailed: word("tl.labelFailed"),
};

export function initTimeline(root) {
  const canvas = root.querySelector(".tl-svg");
  const log = root.querySelector(".event-log");
  const status = root.querySelector("[data-b-status]");
  const pushBtn = root.querySelector("[data-push]");
  const exactBtn = root.querySelector("[data-exact]");
  // hz: the clock and both horizons, as the server last reported them.
  const hz = { head: 0, windowStart: 0, windowEvents: 0, windowCapacity: 0, oldestAgeMs: 0, freshMs: 75000, compacted: 0 };
  const lanes = {};

  const addLog = (lane, cls, text) => {
    log.prepend(h("li", { class: cls }, h("span", { class: "lane-tag" }, "[" + lane + "]"), text));
    while (log.children.length > 200) log.lastElementChild.remove();
  };
  const setHorizons = (m) => {
    for (const k of Object.keys(hz)) if (typeof m[k] === "number" && m[k] > 0) hz[k] = m[k];
    hz.head = Math.max(hz.head, m.rv || 0);
    root.querySelector("[data-window]").textContent = say.windowText(hz.windowStart, hz.windowEvents, hz.windowCapacity,
      Math.round(hz.oldestAgeMs / 1000), Math.round(hz.freshMs / 1000));
    root.querySelector("[data-compacted]").textContent = hz.compacted > 1 ? say.compactedText(hz.compacted) : say.nothingCompacted;
    root.dataset.windowStart = String(hz.windowStart);
    root.dataset.compacted = String(hz.compacted);
    exactBtn.disabled = !online || !(hz.compacted > 1);
  };

  for (const ctl of root.querySelectorAll(".lane-ctl")) {
    const name = ctl.dataset.lane;
    // pausedAt: the rv the lane stopped at; missedAt: when it first
    // missed a change (seen on lane A), for the 75 s the window keeps it.
    const lane = { name, rv: 0, marks: [], paused: false, pausedAt: 0, missedAt: 0, ctl, mode: "list" };
    lanes[name] = lane;
    lane.mark = (type, rv, label) => {
      lane.marks.push({ type, rv, label });
      if (lane.marks.length > MAX_MARKS) lane.marks.shift();
    };
    const setRV = (rv) => {
      lane.rv = rv;
      ctl.querySelector("[data-rv]").replaceChildren("rv " + rv, lane.paused ? h("span", { class: "lane-paused-tag" }, say.paused) : "");
    };
    lane.conn = connect("/ui/ws/watch", {
      // Lane B is paused on purpose; the badge, and whether the buttons
      // may send anything, follow lane A.
      badge: name === "A" ? root.querySelector("[data-conn]") : null,
      onOpen: () => { if (name === "A") setOnline(true); },
      onClose: () => { if (name === "A") setOnline(false); },
      params: () => ({ lane: name, mode: lane.mode, ...(lane.rv ? { rv: lane.rv } : {}) }),
      onMessage: (m) => {
        switch (m.t) {
          case "clock":
            setHorizons(m);
            break;
          case "list": {
            setHorizons(m);
            // A streaming list's state came as initial events, ended by
            // the initial-events-end BOOKMARK at the resourceVersion m.rv.
            const what = (m.relist ? "RE" : "") + (m.streamed ? "STREAMED LIST" : "LIST");
            lane.mark("RELIST", m.rv, what);
            addLog(name, "ev-BOOKMARK", m.streamed
              ? `${what} ${m.request} → ${m.items.length} ADDED, then BOOKMARK k8s.io/initial-events-end resourceVersion=${m.rv}`
              : `${what} ${m.request} → ${m.items.length} pods, resourceVersion=${m.rv}`);
            setRV(m.rv);
            break;
          }
          case "watching":
            addLog(name, "", `WATCH ${m.request}`);
            break;
          case "event":
            hz.head = Math.max(hz.head, m.rv);
            lane.mark(m.type, m.rv, m.name);
            addLog(name, "ev-" + m.type, m.type === "BOOKMARK" ? `BOOKMARK resourceVersion=${m.rv}` : `${m.type} pod/${m.name} resourceVersion=${m.rv}`);
            setRV(m.rv);
            // What a paused B misses, A sees: draw it on B's lane.
            if (name === "A" && lanes.B && lanes.B.paused && m.rv > lanes.B.pausedAt && m.type !== "BOOKMARK") {
              lanes.B.mark("MISSED", m.rv, m.name);
              if (!lanes.B.missedAt) lanes.B.missedAt = Date.now();
            }
            break;
          case "gone":
            lane.mark("ERROR", m.rv, "410");
            addLog(name, "ev-ERROR", `ERROR ${m.code} ${m.reason}: ${m.message}`);
            root.dataset.gone = String((+root.dataset.gone || 0) + 1);
            break;
        }
        explainB();
        draw();
      },
    });
    // How the lane starts: changing it starts the lane again that way.
    const mode = ctl.querySelector("[data-mode]");
    if (mode) mode.addEventListener("change", () => {
      lane.mode = mode.value;
      lane.rv = 0;
      lane.marks = [];
      if (!lane.paused) { lane.conn.stop(); lane.conn.restart(); }
      draw();
    });
    const toggle = ctl.querySelector("[data-toggle]");
    if (toggle) toggle.addEventListener("click", () => {
      lane.paused = !lane.paused;
      toggle.setAttribute("aria-pressed", String(lane.paused));
      toggle.textContent = lane.paused ? root.dataset.resume : root.dataset.pause;
      if (lane.paused) {
        lane.pausedAt = lane.rv;
        lane.missedAt = 0;
        lane.conn.stop();
      } else {
        lane.marks = lane.marks.filter((mk) => mk.type !== "MISSED");
        lane.conn.restart();
      }
      setRV(lane.rv);
      explainB();
      draw();
    });
  }

  // explainB says where watcher B stands, and enables the push once it
  // is paused. The server has the last word: it refuses a push that
  // cannot move the window yet, and says why.
  // While the server is unreachable nothing can be sent: the buttons are
  // off, and the badge says it is reconnecting.
  let online = false;
  const changeBtn = root.querySelector("[data-change]");
  const compactBtn = root.querySelector("[data-compact]");
  const compactAllowed = !compactBtn.disabled;
  function setOnline(on) {
    online = on;
    changeBtn.disabled = !on;
    compactBtn.disabled = !on || !compactAllowed;
    exactBtn.disabled = !on || !(hz.compacted > 1);
    explainB();
  }

  // The countdown sits outside the status region, so that a screen
  // reader hears each change of state once, not every second.
  const countdown = root.querySelector("[data-b-countdown]");
  function explainB() {
    const b = lanes.B;
    if (!b) return;
    let text, left = 0;
    if (!b.paused) text = say.bLive;
    else if (hz.windowStart > b.pausedAt) text = say.bPast(b.pausedAt, hz.windowStart);
    else if (!b.missedAt) text = say.bPaused(b.pausedAt);
    else {
      left = Math.ceil((hz.freshMs - (Date.now() - b.missedAt)) / 1000);
      text = left > 0 ? say.bWait(b.pausedAt, Math.round(hz.freshMs / 1000)) : say.bReady(b.pausedAt);
    }
    if (status.textContent !== text) status.textContent = text;
    countdown.textContent = left > 0 ? say.left(left) : "";
    // During the countdown the server would refuse the push: the button
    // waits with it, and the status beside it says why.
    pushBtn.disabled = !b.paused || !online || left > 0;
  }
  setInterval(() => { if (lanes.B && lanes.B.paused) explainB(); }, 1000);

  // "Change the pod" runs the lesson's label command with a fresh value.
  root.querySelector("[data-change]").addEventListener("click", (e) => {
    const value = "t" + Date.now().toString(36);
    const q = new URLSearchParams({ cmd: "label-pod", value });
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ui/ws/run?" + q);
    e.target.disabled = true;
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      if (m.t === "response" && m.code >= 300) addLog("you", "ev-ERROR", say.labelFailed + ": " + m.status);
      if (m.t === "response" && m.code < 300) addLog("you", "", `PATCH pod/ssa-demo demo-round=${value} → ${m.code}`);
    };
    ws.onclose = () => { e.target.disabled = !online; };
  });

  pushBtn.addEventListener("click", async () => {
    const b = lanes.B;
    pushBtn.disabled = true;
    try {
      const r = await post("/ui/window/push", { past: b.pausedAt });
      setHorizons({ windowStart: r.windowStart });
      addLog("you", "", say.push(r.changes, r.windowStart, r.passed));
      root.dataset.pushed = String(r.windowStart);
    } catch (err) {
      addLog("you", "ev-ERROR", say.pushFailed + ": " + err.message);
    } finally {
      explainB();
      draw();
    }
  });

  exactBtn.addEventListener("click", async () => {
    const rv = hz.compacted - 1;
    const path = `/api/v1/namespaces/${encodeURIComponent(root.dataset.ns)}/pods?resourceVersion=${rv}&resourceVersionMatch=Exact&limit=1`;
    exactBtn.disabled = true;
    try {
      const r = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      const body = await r.json().catch(() => ({}));
      const what = r.ok ? `${(body.items || []).length} item(s), resourceVersion=${body.metadata && body.metadata.resourceVersion}` : `${body.reason || ""}: ${body.message || r.statusText}`;
      addLog("you", r.ok ? "" : "ev-ERROR", `GET ${path} → ${r.status} ${what}`);
      root.dataset.exact = String(r.status);
    } finally {
      exactBtn.disabled = !online || !(hz.compacted > 1);
    }
  });

  root.querySelector("[data-compact]").addEventListener("click", async (e) => {
    e.target.disabled = true;
    try {
      const r = await post("/ui/compact");
      hz.compacted = Math.max(hz.compacted, r.revision);
      hz.head = Math.max(hz.head, r.revision);
      addLog("etcd", "ev-ERROR", say.compact(r.revision));
      setHorizons({});
      draw();
    } catch (err) {
      addLog("etcd", "ev-ERROR", say.compactFailed + ": " + err.message);
    } finally {
      e.target.disabled = !online;
    }
  });

  function draw() {
    const W = Math.max(320, canvas.clientWidth || 900), H = 210, left = W < 600 ? 84 : 118, right = W - 16;
    canvas.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const all = Object.values(lanes).flatMap((l) => l.marks.map((m) => m.rv)).concat([hz.head]);
    let hi = Math.max(...all, 1);
    let lo = Math.min(...all.filter((x) => x > 0), hi);
    for (const edge of [hz.windowStart, hz.compacted]) if (edge > 0 && edge < lo) lo = edge;
    if (hi - lo < 10) lo = Math.max(0, hi - 10);
    const pad = Math.max(1, Math.round((hi - lo) * 0.04));
    lo -= pad; hi += pad;
    const x = (rv) => left + ((rv - lo) / (hi - lo)) * (right - left);
    canvas.replaceChildren();
    // A label beside a mark at x, gap away from its centre, turned to its
    // left near the right edge so that it is never cut off. It returns the
    // span it covers.
    const label = (at, y, text, cls, gap = 4) => {
      const flip = at > right - 150;
      const el = svg("text", { class: cls || "", x: flip ? at - gap : at + gap, y, "text-anchor": flip ? "end" : "start" }, text);
      canvas.append(el);
      // Measured once laid out; an estimate while the canvas is hidden.
      const width = el.getComputedTextLength() || text.length * 8;
      return flip ? [at - gap - width, at] : [at, at + gap + width];
    };
    // etcd's compacted history, then the window's start on top of it.
    if (hz.compacted > lo) {
      canvas.append(svg("rect", { class: "compacted", x: left, y: 24, width: Math.max(0, x(hz.compacted) - left), height: H - 32 }));
      canvas.append(svg("line", { class: "boundary", x1: x(hz.compacted), y1: 22, x2: x(hz.compacted), y2: H - 8 }));
      label(x(hz.compacted), H - 10, say.etcd + " " + hz.compacted);
    }
    if (hz.windowStart > lo) {
      canvas.append(svg("rect", { class: "outside", x: left, y: 24, width: Math.max(0, x(hz.windowStart) - left), height: H - 48 }));
      canvas.append(svg("line", { class: "window", x1: x(hz.windowStart), y1: 22, x2: x(hz.windowStart), y2: H - 24 }));
      label(x(hz.windowStart), 34, say.window + " " + hz.windowStart, "window-label");
    }
    // "now", with etcd's revision, heads its line in the row of the
    // revision ticks, clear of the lanes' cursors; a tick it would touch
    // is left out.
    canvas.append(svg("line", { class: "head", x1: x(hz.head), y1: 18, x2: x(hz.head), y2: H - 8 }));
    const [nowFrom, nowTo] = label(x(hz.head), 14, say.now + " " + hz.head, "head-label");
    const ticks = W < 600 ? 3 : 5;
    for (let i = 0; i <= ticks; i++) {
      const rv = Math.round(lo + ((hi - lo) * i) / ticks);
      if (x(rv) > nowFrom - 24 && x(rv) < nowTo + 24) continue;
      canvas.append(svg("text", { x: x(rv), y: 14, "text-anchor": "middle" }, rv));
    }
    Object.values(lanes).forEach((lane, i) => {
      const y = 76 + i * 64;
      canvas.append(svg("text", { class: "lane-label", x: 8, y: y + 4 }, say.watcher + " " + lane.name));
      if (lane.paused) canvas.append(svg("text", { class: "lane-paused", x: 8, y: y + 18 }, "(" + say.paused + ")"));
      canvas.append(svg("line", { class: "lane-line", x1: left, y1: y, x2: right, y2: y }));
      for (const m of lane.marks) {
        const cx = x(m.rv);
        if (m.type === "ERROR") {
          canvas.append(svg("path", { class: "ERROR", d: `M${cx - 7} ${y - 7} l14 14 m0 -14 l-14 14`, "stroke-width": 3, fill: "none" }));
          label(cx, y - 12, "410 Gone", "", 11);
        } else if (m.type === "RELIST") {
          canvas.append(svg("rect", { class: "RELIST", x: cx - 3, y: y - 14, width: 6, height: 28, rx: 2 }));
          label(cx, y + 26, m.label + " " + m.rv, "", 7);
        } else if (m.type === "BOOKMARK") {
          canvas.append(svg("path", { class: "BOOKMARK", d: `M${cx - 5} ${y - 10} h10 v18 l-5 -5 l-5 5z` }));
        } else if (m.type === "MISSED") {
          canvas.append(svg("circle", { class: "MISSED", cx, cy: y, r: 6 }));
        } else {
          canvas.append(svg("circle", { class: m.type, cx, cy: y, r: 6 }));
        }
      }
      if (lane.rv) canvas.append(svg("path", { class: "cursor", d: `M${x(lane.paused ? lane.pausedAt : lane.rv)} ${y - 18} l-6 -8 h12z` }));
    });
  }
  addEventListener("resize", draw);
  if (!online) setOnline(false);
  draw();
}
