// The labs: a lab page follows the student's own progress and a dashboard
// follows the class, both over one websocket each. Steps are checked on
// the server; these views only show what it decided.
import { h, connect } from "./live.js";

/** initLab keeps a lab page's steps in step with the server's checks. */
export function initLab(el) {
  const badge = el.querySelector("[data-conn]");
  connect("/kubelab/v1/labs/ws", {
    params: () => ({ lab: el.dataset.lab, lang: el.dataset.lang }),
    badge,
    onMessage: (m) => { if (m.t === "lab") showLab(el, m.lab); },
  });
}

function showLab(el, lab) {
  let passed = 0;
  for (const st of lab.steps) {
    const li = el.querySelector(`li[data-step="${CSS.escape(st.id)}"]`);
    if (!li) continue;
    if (st.state === "passed") passed++;
    if (li.dataset.state === st.state) continue;
    li.dataset.state = st.state;
    li.className = "step " + st.state;
    const label = li.querySelector("[data-state-label]");
    if (label) label.textContent = label.dataset[st.state] || st.state;
    const mark = li.querySelector(".step-mark");
    if (mark) mark.textContent = st.state === "passed" ? "✓" : String(st.number);
    const ev = li.querySelector("[data-evidence]");
    if (ev) {
      ev.querySelector("span").textContent = st.evidence || "";
      ev.hidden = !st.evidence;
    }
    const form = li.querySelector("form.step-answer");
    if (form) form.hidden = st.state !== "current";
  }
  const bar = el.querySelector(".lab-progress progress");
  if (bar) bar.value = passed;
  const count = el.querySelector("[data-count]");
  if (count) count.textContent = count.dataset.template.replace("%d", passed).replace("%d", lab.steps.length);
  el.dataset.done = lab.done ? "true" : "false";
}

/** initDashboard redraws the class table from each snapshot. */
export function initDashboard(el) {
  const rows = el.querySelector("[data-rows]");
  const empty = el.querySelector("[data-empty]");
  connect("/kubelab/v1/labs/ws", {
    params: () => ({ dashboard: "1", lang: el.dataset.lang }),
    badge: el.querySelector("[data-conn]"),
    onMessage: (m) => {
      if (m.t !== "class") return;
      const students = m.class.students || [];
      rows.replaceChildren(...students.map((r) => row(el, r, m.class.labs.length)));
      empty.hidden = students.length > 0;
    },
  });
}

function row(el, r, labs) {
  const d = el.dataset;
  let where;
  if (!r.lab) where = [h("span", { class: "muted" }, d.notStarted)];
  else if (r.done) where = [`${r.labNumber}. ${r.lab} · ${d.finished}`];
  else where = [`${r.labNumber}. ${r.lab} · ${r.step}/${r.steps} ${r.stepTitle}`];
  if (r.stuck) where.push(" ", h("span", { class: "pill bad" }, d.stuck));
  const quizzes = Object.keys(r.quizzes || {}).sort().map((id) => {
    const q = r.quizzes[id];
    return h("span", { class: "pill" }, `${id} ${q.scoreGiven}/${q.scoreMaximum}`);
  });
  const updated = r.updated && !r.updated.startsWith("0001") ? h("time", { datetime: r.updated }, r.updated.slice(11, 19)) : "";
  return h("tr", { class: r.stuck ? "stuck" : "", "data-user": r.user },
    h("th", { scope: "row" }, r.user, r.class ? h("small", { class: "muted" }, " · " + r.class) : null),
    h("td", {}, where),
    h("td", {}, `${r.labsDone}/${labs}`),
    h("td", {}, quizzes),
    h("td", {}, updated));
}
