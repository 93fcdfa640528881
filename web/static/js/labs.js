// The labs: a lab page follows the student's own progress and a dashboard
// follows the class, both over one websocket each. Steps are checked on
// the server; these views only show what it decided.
import { connect } from "./live.js";

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
    // Why a step waits can change while its state does not.
    showText(li.querySelector("[data-why]"), st.why);
    if (li.dataset.state === st.state) continue;
    li.dataset.state = st.state;
    li.className = "step " + st.state;
    const label = li.querySelector("[data-state-label]");
    if (label) label.textContent = label.dataset[st.state] || st.state;
    const mark = li.querySelector(".step-mark");
    if (mark) mark.textContent = st.state === "passed" ? "✓" : String(st.number);
    showText(li.querySelector("[data-evidence]"), st.evidence);
    const proof = el.querySelector(`[data-proof="${CSS.escape(st.id)}"] .evidence`);
    if (proof) proof.textContent = st.evidence || "";
    const form = li.querySelector("form.step-answer");
    if (form) form.hidden = st.state !== "current";
  }
  const bar = el.querySelector(".lab-progress progress");
  if (bar) bar.value = passed;
  const count = el.querySelector("[data-count]");
  if (count) count.textContent = count.dataset.template.replace("%d", passed).replace("%d", lab.steps.length);
  showDone(el, lab.done);
}

// showText fills a "label: text" line, hidden while there is no text.
function showText(line, text) {
  if (!line) return;
  line.querySelector("span").textContent = text || "";
  line.hidden = !text;
}

// showDone shows the lab's end when its last step passes, and moves the
// reader there once: the moment is the page's news.
function showDone(el, done) {
  const was = el.dataset.done === "true";
  el.dataset.done = done ? "true" : "false";
  const panel = el.querySelector("[data-done-panel]");
  const check = el.querySelector("form.lab-check");
  if (check) check.hidden = done;
  if (!panel) return;
  panel.hidden = !done;
  if (done && !was && el.dataset.doneSeen !== "true") {
    el.dataset.doneSeen = "true";
    panel.scrollIntoView({ block: "nearest", behavior: "smooth" });
    panel.querySelector("h2")?.focus({ preventScroll: true });
  }
}

/**
 * initDashboard redraws the class table from each snapshot. The server
 * sends the rows drawn by the same template as the page's first ones (its
 * output escaped), so the live table and the page never disagree.
 */
export function initDashboard(el) {
  const rows = el.querySelector("[data-rows]");
  const empty = el.querySelector("[data-empty]");
  const notice = el.querySelector("[data-etcd-space]");
  const view = roomView(el, rows);
  let drawn = "";
  let noticeDrawn = notice.innerHTML.trim();
  connect("/kubelab/v1/labs/ws", {
    params: () => ({ dashboard: "1", lang: el.dataset.lang }),
    badge: el.querySelector("[data-conn]"),
    onMessage: (m) => {
      if (m.t !== "class") return;
      empty.hidden = (m.class.students || []).length > 0;
      // Redrawn only when it changed: the region is read out when it is.
      if (m.notice.trim() !== noticeDrawn) notice.innerHTML = noticeDrawn = m.notice.trim();
      if (m.html === drawn) return;
      drawn = m.html;
      // A keyboard user on a student's link keeps their place.
      const focused = document.activeElement?.closest?.("tr[data-user]")?.dataset.user;
      rows.innerHTML = m.html;
      view.apply();
      if (focused) rows.querySelector(`tr[data-user="${CSS.escape(focused)}"] a`)?.focus();
    },
  });
}

/**
 * roomView keeps the instructor's filter (a state of the summary), search
 * and order over the class table, through every redraw: the server sends
 * the rows in its own order (who needs help first), and apply counts,
 * hides and reorders them as the controls say.
 */
function roomView(el, rows) {
  const chips = [...el.querySelectorAll("[data-filter]")];
  const search = el.querySelector("[data-search]");
  const sort = el.querySelector("[data-sort]");
  const names = new Intl.Collator(el.dataset.lang || undefined, { sensitivity: "base" });
  let filter = "";
  const orders = {
    name: (a, b) => names.compare(a.dataset.name, b.dataset.name),
    progress: (a, b) => Number(b.dataset.progress) - Number(a.dataset.progress),
    activity: (a, b) => Number(b.dataset.updated) - Number(a.dataset.updated),
    score: (a, b) => Number(b.dataset.score) - Number(a.dataset.score),
  };
  const apply = () => {
    const all = [...rows.querySelectorAll("tr[data-user]")];
    // Each row's place as the server sent it, for its own order and to
    // break ties in the others.
    all.forEach((r, i) => { r.dataset.at ??= i; });
    for (const chip of chips) {
      chip.querySelector("[data-count]").textContent = all.filter((r) => r.dataset.state === chip.dataset.filter).length;
      chip.setAttribute("aria-pressed", String(chip.dataset.filter === filter));
    }
    const q = search.value.trim().toLocaleLowerCase();
    for (const r of all) {
      const found = !q || r.dataset.name.toLocaleLowerCase().includes(q) || r.dataset.user.includes(q);
      r.hidden = !found || (filter !== "" && r.dataset.state !== filter);
    }
    const sent = (a, b) => a.dataset.at - b.dataset.at;
    const order = orders[sort.value];
    rows.append(...all.sort((a, b) => (order ? order(a, b) : 0) || sent(a, b)));
  };
  for (const chip of chips) {
    chip.addEventListener("click", () => {
      filter = filter === chip.dataset.filter ? "" : chip.dataset.filter;
      apply();
    });
  }
  search.addEventListener("input", apply);
  sort.addEventListener("change", apply);
  return { apply };
}
