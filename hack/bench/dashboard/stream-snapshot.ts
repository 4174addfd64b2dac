// The event stream as the Jobs page opens it, naming the 50 Jobs on screen, read in the page
// until its snapshot event and parsed: how long that took and how many bytes came. A string, for
// page.evaluate: the benches are type-checked without the DOM library.
export const STREAM_SNAPSHOT = `(async () => {
  const session = JSON.parse(sessionStorage.getItem("rlark.session") ?? "{}");
  const names = [...document.querySelectorAll("tr[data-job]")].map((tr) => tr.dataset.job).sort();
  const controller = new AbortController();
  const started = performance.now();
  const query = new URLSearchParams({ token: session.token, jobs: names.join(",") });
  const response = await fetch("/api/v1/events?" + query, { signal: controller.signal });
  const reader = response.body.getReader();
  const text = new TextDecoder();
  let bytes = 0, buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done || !value) break;
    bytes += value.length;
    buffered += text.decode(value, { stream: true });
    if (buffered.includes("event: snapshot") && buffered.endsWith("\\n\\n")) break;
  }
  const snapshot = buffered.slice(buffered.indexOf("data: ") + 6);
  JSON.parse(snapshot.slice(0, snapshot.indexOf("\\n")));
  controller.abort();
  return { ms: performance.now() - started, bytes };
})()`;
