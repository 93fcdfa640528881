// The buttons under each command the lesson and the labs show: "Copy",
// and, on a page with a terminal, "Paste into terminal", which puts the
// command on the terminal's line without running it (terminal.js). The
// server marks each block with its commands (data-commands), without the
// "$ " prompts and the output that a transcript shows around them.
import { h, say } from "./live.js";

export function initCommand(pre) {
  let cmds;
  try { cmds = JSON.parse(pre.dataset.commands); } catch { return; }
  if (!Array.isArray(cmds) || cmds.length === 0) return;
  const text = cmds.join("\n");
  const copy = h("button", { type: "button", class: "btn ghost", "data-copy-command": "" }, say("cmd.copy"));
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = say("cmd.copied");
      setTimeout(() => { copy.textContent = say("cmd.copy"); }, 1500);
    } catch { /* no clipboard: the command is on the page to select */ }
  });
  const bar = h("div", { class: "cmd-tools" }, copy);
  if (document.querySelector("[data-terminal]")) {
    const paste = h("button", { type: "button", class: "btn ghost", "data-paste-command": "" }, say("cmd.paste"));
    paste.addEventListener("click", () => document.dispatchEvent(new CustomEvent("kubelab:paste", { detail: text })));
    bar.append(paste);
  }
  pre.after(bar);
}
