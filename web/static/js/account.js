// The signed-in student, in the header: who and which namespace, the
// kubeconfig download for their own kubectl, and sign-out. Shown only in
// classroom mode; the local user of a local kubelab has no account.
export async function initAccount(el) {
  let who;
  try {
    const resp = await fetch("/kubelab/v1/whoami", { headers: { Accept: "application/json" } });
    if (!resp.ok) return;
    who = await resp.json();
  } catch {
    return;
  }
  if (!who.classroom || who.user.name === "system:anonymous") return;

  const name = document.createElement("span");
  name.className = "account-name";
  name.textContent = who.displayName || who.user.name; // text, never markup
  const ns = document.createElement("code");
  ns.className = "account-ns";
  ns.textContent = who.namespace;

  // A form POST, not a link: each download mints a token, and a GET is
  // what any page can make the browser send (kubelab refuses it).
  const kubeconfig = document.createElement("form");
  kubeconfig.className = "account-kubeconfig";
  kubeconfig.method = "post";
  kubeconfig.action = "/kubelab/v1/kubeconfig";
  const download = document.createElement("button");
  download.type = "submit";
  download.textContent = el.dataset.kubeconfig;
  download.title = el.dataset.kubeconfigHelp;
  kubeconfig.append(download);

  const form = document.createElement("form");
  form.method = "post";
  form.action = "/signout";
  const out = document.createElement("button");
  out.type = "submit";
  out.textContent = el.dataset.signout;
  form.append(out);

  el.append(name, ns, kubeconfig, form);
  el.hidden = false;
}
