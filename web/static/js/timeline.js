// The watch timeline: etcd's revision as a clock, two watchers as lanes,
// their events as marks, the compaction boundary, and the 410 and relist a
// lagging watcher meets after a compaction.
import { connect, h, svg, post } from "./live.js";

const MAX_MARKS = 80;

export function initTimeline(root) {
  const canvas = root.querySelector(".tl-svg");
  const log = root.querySelector(".event-log");
  const state = { head: 0, oldest: 0 };
  const lanes = {};

  const addLog = (lane, cls, text) => {
    log.prepend(h("li", { class: cls }, h("span", { class: "lane-tag" }, "[" + lane + "]"), text));
    while (log.children.length > 200) log.lastElementChild.remove();
  };

  for (const ctl of root.querySelectorAll(".lane-ctl")) {
    const name = ctl.dataset.lane;
    const lane = { name, rv: 0, marks: [], paused: false, ctl };
    lanes[name] = lane;
    const mark = (type, rv, label) => {
      lane.marks.push({ type, rv, label });
      if (lane.marks.length > MAX_MARKS) lane.marks.shift();
    };
    const setRV = (rv) => { lane.rv = rv; ctl.querySelector("[data-rv]").textContent = "rv " + rv + (lane.paused ? " ⏸" : ""); };
    lane.conn = connect("/ui/ws/watch", {
      // Lane B is paused on purpose; the badge follows lane A.
      badge: name === "A" ? root.querySelector("[data-conn]") : null,
      params: () => ({ lane: name, ...(lane.rv ? { rv: lane.rv } : {}) }),
      onMessage: (m) => {
        if (m.head) state.head = Math.max(state.head, m.head);
        if (m.rv) state.head = Math.max(state.head, m.rv);
        if (m.oldest) state.oldest = m.oldest;
        switch (m.t) {
          case "list":
            mark("RELIST", m.rv, m.relist ? "RELIST" : "LIST");
            addLog(name, "ev-BOOKMARK", `${m.relist ? "RELIST" : "LIST"} ${m.request} → ${m.items.length} pods, resourceVersion=${m.rv}`);
            setRV(m.rv);
            break;
          case "watching":
            addLog(name, "", `WATCH ${m.request}`);
            break;
          case "event":
            mark(m.type, m.rv, m.name);
            addLog(name, "ev-" + m.type, m.type === "BOOKMARK" ? `BOOKMARK rv=${m.rv}` : `${m.type} Pod rv=${m.rv} name=${m.name}`);
            setRV(m.rv);
            break;
          case "gone":
            mark("ERROR", m.rv, "410");
            addLog(name, "ev-ERROR", `ERROR ${m.code} ${m.reason}: ${m.message}`);
            root.dataset.gone = String((+root.dataset.gone || 0) + 1);
            break;
        }
        draw();
      },
    });
    const toggle = ctl.querySelector("[data-toggle]");
    if (toggle) toggle.addEventListener("click", () => {
      lane.paused = !lane.paused;
      toggle.setAttribute("aria-pressed", String(lane.paused));
      toggle.textContent = lane.paused ? root.dataset.resume : root.dataset.pause;
      if (lane.paused) lane.conn.stop(); else lane.conn.restart();
      setRV(lane.rv);
      draw();
    });
  }

  // "Change the pod" runs the lesson's label command with a fresh value.
  root.querySelector("[data-change]").addEventListener("click", (e) => {
    const value = "t" + Date.now().toString(36);
    const q = new URLSearchParams({ cmd: "label-pod", value });
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ui/ws/run?" + q);
    e.target.disabled = true;
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      if (m.t === "response" && m.code >= 300) addLog("you", "ev-ERROR", "label failed: " + m.status);
    };
    ws.onclose = () => { e.target.disabled = false; };
    addLog("you", "", `PATCH pod ssa-demo label demo-round=${value}`);
  });

  root.querySelector("[data-compact]").addEventListener("click", async (e) => {
    e.target.disabled = true;
    try {
      const r = await post("/ui/compact");
      state.oldest = r.revision;
      state.head = Math.max(state.head, r.revision);
      addLog("etcd", "ev-ERROR", `COMPACT revision=${r.revision}: history before it is gone`);
      root.dataset.compacted = String(r.revision);
      draw();
    } catch (err) {
      addLog("etcd", "ev-ERROR", "compact failed: " + err.message);
    } finally {
      e.target.disabled = false;
    }
  });

  function draw() {
    const W = Math.max(320, canvas.clientWidth || 900), H = 190, left = 118, right = W - 24;
    canvas.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const all = Object.values(lanes).flatMap((l) => l.marks.map((m) => m.rv)).concat([state.head]);
    let hi = Math.max(...all, 1);
    let lo = Math.min(...all.filter((x) => x > 0), hi);
    if (state.oldest && state.oldest < lo) lo = state.oldest;
    if (hi - lo < 10) lo = Math.max(0, hi - 10);
    const pad = Math.max(1, Math.round((hi - lo) * 0.04));
    lo -= pad; hi += pad;
    const x = (rv) => left + ((rv - lo) / (hi - lo)) * (right - left);
    canvas.replaceChildren();
    if (state.oldest > lo) {
      canvas.append(svg("rect", { class: "compacted", x: left, y: 26, width: Math.max(0, x(state.oldest) - left), height: H - 34 }));
      canvas.append(svg("line", { class: "boundary", x1: x(state.oldest), y1: 22, x2: x(state.oldest), y2: H - 8 }));
      canvas.append(svg("text", { x: x(state.oldest) + 4, y: H - 12 }, "410 below rv " + state.oldest));
    }
    for (let i = 0; i <= 5; i++) {
      const rv = Math.round(lo + ((hi - lo) * i) / 5);
      canvas.append(svg("text", { x: x(rv), y: 16, "text-anchor": "middle" }, rv));
    }
    canvas.append(svg("line", { class: "head", x1: x(state.head), y1: 22, x2: x(state.head), y2: H - 8 }));
    Object.values(lanes).forEach((lane, i) => {
      const y = 68 + i * 62;
      canvas.append(svg("text", { class: "lane-label", x: 10, y: y + 4 }, "Watcher " + lane.name + (lane.paused ? " ⏸" : "")));
      canvas.append(svg("line", { class: "lane-line", x1: left, y1: y, x2: right, y2: y }));
      for (const m of lane.marks) {
        const cx = x(m.rv);
        if (m.type === "ERROR") {
          canvas.append(svg("path", { class: "ERROR", d: `M${cx - 7} ${y - 7} l14 14 m0 -14 l-14 14`, stroke: "#c92a2a", "stroke-width": 3, fill: "none" }));
          canvas.append(svg("text", { x: cx + 8, y: y - 12 }, "410 Gone"));
        } else if (m.type === "RELIST") {
          canvas.append(svg("rect", { class: "RELIST", x: cx - 3, y: y - 14, width: 6, height: 28, rx: 2 }));
          canvas.append(svg("text", { x: cx + 6, y: y + 24 }, m.label + " " + m.rv));
        } else if (m.type === "BOOKMARK") {
          canvas.append(svg("path", { class: "BOOKMARK", d: `M${cx - 5} ${y - 10} h10 v18 l-5 -5 l-5 5z` }));
        } else {
          canvas.append(svg("circle", { class: m.type, cx, cy: y, r: 6 }, null));
        }
      }
      if (lane.rv) canvas.append(svg("path", { class: "cursor", d: `M${x(lane.rv)} ${y - 18} l-6 -8 h12z` }));
    });
  }
  addEventListener("resize", draw);
  draw();
}
