// The pipeline tracer: the reader's requests as they pass each stage, drawn
// on the page's flowchart and listed with every record the server kept.
import { connect, h, say } from "./live.js";

const ORDER = ["authentication", "authorization", "mutating-admission", "validation", "validating-admission", "storage", "watch"];
const RANK = { allow: 0, mutate: 1, error: 2, deny: 3 };
const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

export function fmtDur(ns) {
  if (ns < 1000) return ns + " ns";
  if (ns < 1e6) return (ns / 1000).toFixed(ns < 1e4 ? 1 : 0) + " µs";
  return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + " ms";
}

/** stagesOf folds a trace's records into one outcome per stage. */
export function stagesOf(tr) {
  const out = {};
  for (const r of tr.records || []) {
    const s = out[r.stage] || (out[r.stage] = { decision: "allow", duration: 0, records: [] });
    s.duration += r.duration || 0;
    s.records.push(r);
    if (RANK[r.decision] > RANK[s.decision]) s.decision = r.decision;
  }
  // The fan-out: a write that etcd accepted becomes a watch event for every watcher.
  const st = out.storage;
  if (st && st.decision !== "deny" && st.decision !== "error" && (WRITES.has(tr.verb) || tr.verb === "watch")) {
    const rv = st.records.map((r) => r.resourceVersion).filter(Boolean).pop();
    out.watch = { decision: "allow", duration: 0, records: [], note: rv ? "rv " + rv : "" };
  }
  return out;
}

export function initTracer(root) {
  const list = root.querySelector(".trace-list");
  const flow = document.querySelector("[data-flow]");
  let since = "", animating = 0;

  const animate = (tr) => {
    if (!flow) return;
    const stages = stagesOf(tr);
    clearTimeout(animating);
    const nodes = [...flow.querySelectorAll(".flow-node")];
    for (const n of nodes) { n.classList.remove("active", "allow", "deny", "error", "mutate", "skipped"); n.querySelector(".flow-dur").textContent = ""; }
    const client = flow.querySelector('[data-stage="client"]');
    client.classList.add("active");
    client.querySelector(".flow-dur").textContent = tr.verb + " " + tr.code;
    let stopped = false, i = 0;
    const step = () => {
      if (i >= ORDER.length) { client.classList.replace("active", tr.code < 400 ? "allow" : "deny"); return; }
      const name = ORDER[i++];
      const node = flow.querySelector(`[data-stage="${name}"]`);
      const s = stages[name];
      if (stopped || !s) {
        node.classList.add("skipped");
      } else {
        node.classList.add(s.decision);
        const reason = s.records.find((r) => r.decision === "deny" || r.decision === "error");
        node.querySelector(".flow-dur").textContent = s.note || (reason ? s.decision.toUpperCase() + " · " + fmtDur(s.duration) : fmtDur(s.duration));
        if (s.decision === "deny" || s.decision === "error") stopped = true;
      }
      animating = setTimeout(step, matchMedia("(prefers-reduced-motion: reduce)").matches ? 0 : 160);
    };
    step();
  };

  const render = (tr) => {
    const stages = stagesOf(tr);
    const failed = tr.code >= 400;
    const chips = [];
    let why = null, patches = [];
    for (const name of ORDER) {
      const s = stages[name];
      if (!s) continue;
      for (const r of s.records) {
        chips.push(h("li", { class: r.decision, title: r.reason || "" }, `${name}${r.plugin ? ":" + r.plugin : ""} ${r.decision} ${fmtDur(r.duration)}`));
        if ((r.decision === "deny" || r.decision === "error") && !why) why = `${name}${r.plugin ? " (" + r.plugin + ")" : ""}: ${r.reason || r.decision}`;
        if (r.patch) patches.push(h("pre", { class: "trace-patch" }, `${r.plugin || name} patch: ${JSON.stringify(r.patch)}`));
      }
      if (s.note) chips.push(h("li", { class: "allow" }, `watch fan-out ${s.note}`));
    }
    const li = h("li", { class: "trace" + (failed ? " failed" : ""), "data-trace": tr.id, "data-verb": tr.verb, "data-code": tr.code, "data-source": tr.source || null },
      h("div", { class: "trace-line" },
        h("span", { class: "trace-verb" }, tr.verb),
        h("span", { class: "trace-path" }, tr.path),
        h("span", { class: "trace-user" }, tr.as ? `${tr.user} as ${tr.as}` : tr.user),
        // A request a page's view sent for the user, not their own client.
        tr.source && h("span", { class: "trace-source", title: say("tracer.source") },
          "kubelab · " + tr.source),
        h("span", { class: "trace-code" }, String(tr.code)),
        // The request's whole time, beside its stages' own.
        tr.duration ? h("span", { class: "trace-total", title: say("tracer.total") }, fmtDur(tr.duration)) : null),
      h("ul", { class: "stages", "aria-label": say("tracer.stages") }, chips),
      why && h("p", { class: "trace-why" }, say("tracer.stoppedAt", { why })),
      patches);
    list.querySelector(".empty")?.remove();
    list.prepend(li);
    while (list.children.length > 60) list.lastElementChild.remove();
  };

  connect("/ui/ws/trace", {
    badge: root.querySelector("[data-conn]"),
    params: () => (since ? { since } : {}),
    onMessage: (m) => {
      if (m.t !== "trace") return;
      since = m.trace.time;
      render(m.trace);
      if (!m.replay) animate(m.trace);
    },
  });
}
