// "Run it live": the lesson's command, sent by the server through the same
// pipeline kubectl's requests take, in the reader's namespace; the real
// request line and response appear beside the lesson's recorded output.
import { h, lang } from "./live.js";

const T = {
  en: { running: "running…", done: "done", stopped: "stopped", failed: "failed", lost: "connection lost" },
  th: { running: "กำลังรัน…", done: "เสร็จแล้ว", stopped: "หยุดแล้ว", failed: "ล้มเหลว", lost: "การเชื่อมต่อหลุด" },
}[lang];

export function initRun(fig) {
  const run = fig.querySelector("[data-run]");
  if (!run) return;
  const stop = fig.querySelector("[data-stop]");
  const pane = fig.querySelector(".pane.livepane");
  const req = fig.querySelector(".live-req code");
  const resp = fig.querySelector(".live-resp code");
  const respPre = fig.querySelector(".live-resp");
  const stateEl = fig.querySelector(".cmd-state");
  const input = fig.querySelector("input[name=value]");
  let ws = null;

  const finish = (text) => {
    stateEl.textContent = text;
    run.disabled = false;
    stop.hidden = true;
    fig.dataset.state = "done";
  };

  run.addEventListener("click", () => {
    if (ws) ws.close();
    pane.hidden = false;
    req.replaceChildren();
    resp.replaceChildren();
    respPre.classList.remove("failed");
    stateEl.textContent = T.running;
    fig.dataset.state = "running";
    run.disabled = true;
    stop.hidden = false;
    const q = new URLSearchParams({ cmd: fig.dataset.cmd });
    if (input) q.set("value", input.value);
    ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ui/ws/run?" + q);
    let ended = false;
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      switch (m.t) {
        case "request":
          // A command may send several requests (kubectl label: a GET,
          // then a PATCH); each starts a block of its own, in both panes.
          if (req.childNodes.length) req.append("\n");
          if (resp.childNodes.length) resp.append("\n");
          req.append(h("span", { class: "hl-status" }, m.line), "\n");
          for (const [k, v] of Object.entries(m.headers || {})) req.append(k + ": " + v + "\n");
          if (m.body) req.append("\n" + m.body);
          break;
        case "response":
          resp.append(h("span", { class: "hl-status" }, "HTTP/1.1 " + m.status), "\n");
          for (const [k, v] of Object.entries(m.headers || {})) resp.append(k + ": " + v + "\n");
          resp.append("\n");
          if (m.code >= 400) respPre.classList.add("failed");
          fig.dataset.code = m.code;
          break;
        case "line":
          resp.append(m.type ? h("span", { class: "ev-" + m.type }, m.text) : m.text, "\n");
          break;
        case "error":
          respPre.classList.add("failed");
          resp.append(h("span", { class: "ev-ERROR" }, m.message), "\n");
          break;
        case "end":
          ended = true;
          finish(T.done);
          break;
      }
      respPre.scrollTop = respPre.scrollHeight;
    };
    ws.onclose = (e) => {
      ws = null;
      if (!ended) finish(e.code === 1000 ? T.stopped : T.lost + (e.reason ? ": " + e.reason : ""));
    };
  });
  stop.addEventListener("click", () => ws && ws.close(1000, "stopped"));
}
