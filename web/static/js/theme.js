// The theme follows the system until the reader picks one, which is remembered.
const KEY = "kubelab-theme";

export function initTheme() {
  const root = document.documentElement;
  const saved = localStorage.getItem(KEY);
  if (saved === "light" || saved === "dark") root.dataset.theme = saved;
  const btn = document.querySelector("[data-theme-toggle]");
  if (!btn) return;
  const current = () => root.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  const sync = () => btn.setAttribute("aria-pressed", String(current() === "dark"));
  sync();
  btn.addEventListener("click", () => {
    const next = current() === "dark" ? "light" : "dark";
    root.dataset.theme = next;
    localStorage.setItem(KEY, next);
    sync();
  });
}
