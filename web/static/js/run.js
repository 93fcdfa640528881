// "Run it live": the lesson's command, sent by the server through the same
// pipeline kubectl's requests take, in the reader's namespace; the real
// request line and response appear beside the lesson's recorded output.
import { h, lang, say } from "./live.js";

const T = {
  running: say("run.running"), done: say("run.done"), stopped: say("run.stopped"),
  failed: say("run.failed"), failedAt: say("run.failedAt"), lost: say("run.lost"),
};

export function initRun(fig) {
  const run = fig.querySelector("[data-run]");
  if (!run) return;
  const stop = fig.querySelector("[data-stop]");
  const pane = fig.querySelector(".pane.livepane");
  const req = fig.querySelector(".live-req code");
  const resp = fig.querySelector(".live-resp code");
  const respPre = fig.querySelector(".live-resp");
  const stateEl = fig.querySelector(".cmd-state");
  const failedEl = fig.querySelector("[data-failed]");
  const printedBox = fig.querySelector("[data-printed]");
  const printed = printedBox.querySelector("code");
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
    printed.replaceChildren();
    printedBox.hidden = true;
    failedEl.hidden = true;
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
        case "body":
          // The raw answer, as the server sent it.
          resp.append(m.type ? h("span", { class: "ev-" + m.type }, m.text) : m.text, "\n");
          break;
        case "line":
          // What the command prints from it (a table, a jq filter's result).
          printedBox.hidden = false;
          printed.append(m.type ? h("span", { class: "ev-" + m.type }, m.text) : m.text, "\n");
          break;
        case "failed":
          failedEl.hidden = false;
          failedEl.replaceChildren(h("strong", {}, T.failedAt + " " + m.status), m.message ? " " + m.message : "");
          break;
        case "error":
          respPre.classList.add("failed");
          failedEl.hidden = false;
          failedEl.replaceChildren(h("strong", {}, T.failedAt), " " + m.message);
          break;
        case "end":
          ended = true;
          finish(failedEl.hidden ? T.done : T.failed);
          break;
      }
      // A stream (watch events) follows its newest line; a whole answer
      // is read from its top, status line and headers first.
      if (m.t === "body" && m.type) respPre.scrollTop = respPre.scrollHeight;
      if (m.t === "line" && m.type) printedBox.querySelector("pre").scrollTop = printedBox.querySelector("pre").scrollHeight;
    };
    ws.onclose = (e) => {
      ws = null;
      if (!ended) finish(e.code === 1000 ? T.stopped : T.lost + (e.reason ? ": " + e.reason : ""));
    };
  });
  stop.addEventListener("click", () => ws && ws.close(1000, "stopped"));
}

// A lesson exercise that is also a quiz ("Show the answer" under the
// spot-the-bug script): the page carries no answer. Once the reader has
// submitted the quiz, their own latest result brings the explanation in,
// if the instructor's reveal policy shows it; the server decides.
export async function initQuizAnswer(el) {
  const id = el.dataset.quizAnswer;
  const body = el.querySelector(".quiz-answer-body");
  const base = "/kubelab/v1/quizzes/" + encodeURIComponent(id);
  const get = async (path) => {
    const r = await fetch(path + "?lang=" + lang, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  };
  let result;
  try {
    // Attempts come in order; an open one (never submitted) has no result.
    const submitted = ((await get(base + "/attempts")).items || []).filter((a) => !a.timestamp.startsWith("0001-"));
    if (!submitted.length) return;
    const last = submitted[submitted.length - 1];
    result = await get(base + "/attempts/" + encodeURIComponent(last.attemptId));
  } catch {
    return; // not signed in, or no quiz: the page keeps saying how to get the answer
  }
  const link = h("a", { href: "/quiz/" + encodeURIComponent(id) + "/attempts/" + encodeURIComponent(result.attempt) }, el.dataset.see + " →");
  if (!result.revealed) {
    body.replaceChildren(h("p", { class: "quiz-answer-locked" }, el.dataset.waiting, " ", link));
    el.dataset.state = "waiting";
    return;
  }
  const parts = [];
  for (const q of result.questions || []) {
    if (q.explanation) parts.push(h("p", {}, q.explanation));
    for (const b of q.bugs || []) parts.push(h("p", {}, h("strong", {}, b.reason), " ", b.explanation || ""));
  }
  parts.push(h("p", {}, link));
  body.replaceChildren(...parts);
  el.dataset.state = "revealed";
}
