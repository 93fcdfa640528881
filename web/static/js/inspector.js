// The etcd inspector: keys under /registry, a value's raw bytes as hex with
// the k8s\0 prefix marked, its protobuf fields decoded, and the JSON the API
// returns for the same object.
import { h, say } from "./live.js";

const W = { bytes: say("insp.bytes"), prefix: say("insp.prefix") };

const hex2 = (b) => b.toString(16).padStart(2, "0");

export function initInspector(root) {
  const filter = root.querySelector("[data-filter]");
  const keys = root.querySelector("[data-keys]");
  const title = root.querySelector("[data-key-title]");
  const hexEl = root.querySelector("[data-hex]");
  const fieldsEl = root.querySelector("[data-fields]");
  const jsonEl = root.querySelector("[data-json] code");
  const badge = root.querySelector("[data-conn]");
  let bytes = [], cells = [];

  const loadKeys = async () => {
    try {
      const r = await fetch("/ui/etcd/keys?prefix=" + encodeURIComponent(filter.value), { credentials: "same-origin" });
      const data = await r.json();
      if (!r.ok) throw new Error(data.message || r.statusText);
      // A read, not a stream: the badge says when it was read, not that
      // it is live.
      badge.className = "conn idle";
      badge.textContent = say("insp.readAt", { rev: data.revision });
      keys.replaceChildren(...data.keys.map((k) => h("li", null, h("button", { type: "button", "data-key": k, "aria-pressed": "false" }, k))));
    } catch (err) {
      badge.className = "conn down";
      // fetch itself fails (TypeError) only when the server does not answer.
      badge.textContent = err instanceof TypeError ? say("unreachable") : err.message;
    }
  };
  let t = 0;
  filter.addEventListener("input", () => { clearTimeout(t); t = setTimeout(loadKeys, 200); });
  keys.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-key]");
    if (!b) return;
    for (const o of keys.querySelectorAll("[aria-pressed=true]")) o.setAttribute("aria-pressed", "false");
    b.setAttribute("aria-pressed", "true");
    show(b.dataset.key);
  });

  const highlight = (start, end) => {
    for (const c of hexEl.querySelectorAll(".hl")) c.classList.remove("hl");
    for (let i = start; i < end && i < cells.length; i++) cells[i].classList.add("hl");
    cells[start]?.scrollIntoView({ block: "nearest" });
  };

  const fieldTree = (fields) => h("ul", null, fields.map((f) => {
    const label = h("span", { tabindex: "0", "data-start": f.start, "data-end": f.end },
      h("span", { class: "f-num" }, `#${f.num} `), h("span", { class: "f-name" }, f.name || "?"),
      h("span", { class: "f-num" }, ` ${f.wire} [${f.start}…${f.end})`),
      f.value != null ? h("span", { class: "f-val" }, " = " + f.value) : null);
    return h("li", null, label, f.children && f.children.length ? fieldTree(f.children) : null);
  }));

  async function show(key) {
    title.textContent = key;
    const r = await fetch("/ui/etcd/value?key=" + encodeURIComponent(key), { credentials: "same-origin" });
    const data = await r.json();
    if (!r.ok) { title.textContent = data.message || r.statusText; return; }
    title.textContent = `${data.key}  ·  mod_revision ${data.modRevision}  ·  ${data.size} ${W.bytes}`;
    bytes = Uint8Array.from(atob(data.raw), (c) => c.charCodeAt(0));
    cells = [];
    const rows = [];
    for (let off = 0; off < bytes.length; off += 16) {
      const hexes = [], ascii = [];
      for (let i = off; i < Math.min(off + 16, bytes.length); i++) {
        const cell = h("span", { class: "hex-b" + (i < data.prefixLen ? " prefix" : "") }, hex2(bytes[i]));
        cells.push(cell);
        hexes.push(cell, " ");
        ascii.push(bytes[i] >= 32 && bytes[i] < 127 ? String.fromCharCode(bytes[i]) : "·");
      }
      rows.push(h("div", { class: "hex-row" }, h("span", { class: "hex-off" }, off.toString(16).padStart(6, "0")), h("span", null, hexes), h("span", { class: "hex-a" }, ascii.join(""))));
    }
    hexEl.replaceChildren(...rows);
    const parts = [];
    if (data.prefixLen) parts.push(h("p", { class: "prefix-note" }, `${W.bytes} 0…${data.prefixLen}: ${W.prefix}`));
    if (data.apiVersion || data.kind) parts.push(h("p", null, `runtime.Unknown → ${data.apiVersion} ${data.kind}`));
    if (data.decodeError) parts.push(h("p", { class: "ev-ERROR" }, data.decodeError));
    parts.push(fieldTree(data.fields || []));
    fieldsEl.replaceChildren(...parts);
    jsonEl.textContent = data.json || "";
  }
  for (const ev of ["mouseover", "focusin"]) {
    fieldsEl.addEventListener(ev, (e) => {
      const s = e.target.closest("[data-start]");
      if (s) highlight(+s.dataset.start, +s.dataset.end);
    });
  }
  loadKeys();
}
