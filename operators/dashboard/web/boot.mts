// The page's safety net, a classic script beside its module graph. When one module of the page
// cannot be fetched (Chromium fails what is in flight when the machine's network changes:
// ERR_NETWORK_CHANGED; a dropped connection), the browser runs none of the graph and
// the page would say "Loading…" for ever. After the load event, which waits for the modules,
// a page whose main module has not started is reloaded, twice at most in a row (such failures
// pass), then says what went wrong.
const RELOADS = "rlark-dashboard-reloads";
const MAX_RELOADS = 2;

window.addEventListener("load", () => {
  if (document.documentElement.dataset.started) {
    sessionStorage.removeItem(RELOADS);
    return;
  }
  const reloads = Number(sessionStorage.getItem(RELOADS) ?? "0");
  if (reloads < MAX_RELOADS) {
    sessionStorage.setItem(RELOADS, String(reloads + 1));
    location.reload();
    return;
  }
  sessionStorage.removeItem(RELOADS);
  const page = document.getElementById("page");
  if (!page) return;
  const alert = document.createElement("p");
  alert.setAttribute("role", "alert");
  alert.textContent =
    "The dashboard's code did not load (a request to the hub failed). Reload the page to try again.";
  page.replaceChildren(alert);
});
