// Poll vs watch: the lesson's 500 ms poller and one watch, run by the
// server against the real API, race to notice the same change.
import { connect } from "./live.js";

const fmtBytes = (n) => (n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(2) + " MB");

export function initPollWatch(root) {
  const start = root.querySelector("[data-start]");
  const change = root.querySelector("[data-change]");
  let conn = null;
  const card = (side) => root.querySelector(`[data-side=${side}]`);
  const set = (side, m) => {
    const c = card(side);
    c.querySelector("[data-requests]").textContent = m.requests;
    c.querySelector("[data-bytes]").textContent = fmtBytes(m.bytes);
    if (m.noticedMs != null) c.querySelector("[data-delay]").textContent = m.noticedMs.toFixed(1) + " ms";
  };
  start.addEventListener("click", () => {
    if (conn) conn.stop();
    for (const s of ["poll", "watch"]) { card(s).classList.remove("winner"); set(s, { requests: 0, bytes: 0 }); card(s).querySelector("[data-delay]").textContent = "–"; }
    conn = connect("/ui/ws/pollwatch", {
      badge: root.querySelector("[data-conn]"),
      onOpen: () => { change.disabled = false; },
      onClose: () => { change.disabled = true; },
      onMessage: (m) => {
        if (m.t !== "stats") return;
        set("poll", m.poll);
        set("watch", m.watch);
        if (m.poll.noticedMs != null && m.watch.noticedMs != null) {
          card(m.watch.noticedMs <= m.poll.noticedMs ? "watch" : "poll").classList.add("winner");
          root.dataset.done = "1";
        }
      },
    });
  });
  change.addEventListener("click", () => conn && conn.send({ t: "change" }));
}
