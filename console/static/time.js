// The UTC / local time toggle. The server renders every time in UTC inside <time datetime="…">; when the
// reader picks "local" (kept in localStorage), this rewrites them in the browser's zone, keeping their
// precision (seconds, or milliseconds for data-precision="ms"), and names the zone in the header. Relative
// times ("3m ago", data-relative) keep their text; their title gives the exact time in the chosen zone.
// Charts (console.js) ask window.consoleTime for labels and redraw on the "console:timezone" event.
(() => {
  const KEY = "console.timeZone";
  const pad = (n, w = 2) => String(n).padStart(w, "0");

  const localZone = () => {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
    } catch {
      return "local time";
    }
  };
  let mode = "utc";
  try {
    if (localStorage.getItem(KEY) === "local") mode = "local";
  } catch {
    /* storage unavailable: UTC */
  }
  const zone = () => (mode === "local" ? localZone() : "UTC");

  // "+01:00" / "-05:00" for a local date (the offset of that instant, so DST is right per time).
  const offsetOf = (d) => {
    const m = -d.getTimezoneOffset();
    const a = Math.abs(m);
    return `${m >= 0 ? "+" : "-"}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
  };

  /** An instant as ISO text in the chosen zone: "…Z" in UTC, "…-05:00" in local time; ms when asked. */
  function format(t, withMs) {
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) return "?";
    if (mode !== "local") {
      const s = d.toISOString();
      return withMs ? s : s.replace(/\.\d{3}Z$/, "Z");
    }
    const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${withMs ? `.${pad(d.getMilliseconds(), 3)}` : ""}`;
    return `${date}T${time}${offsetOf(d)}`;
  }

  /** "HH:MM" in the chosen zone (chart axis labels). */
  function hhmm(t) {
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) return "?";
    return mode === "local" ? `${pad(d.getHours())}:${pad(d.getMinutes())}` : d.toISOString().slice(11, 16);
  }

  function render(root) {
    if (!root?.querySelectorAll) return;
    const z = zone();
    for (const el of root.querySelectorAll("time[datetime]")) {
      const t = Date.parse(el.getAttribute("datetime") || "");
      if (Number.isNaN(t)) continue;
      if (el.hasAttribute("data-relative")) {
        el.title = `${format(t, false)} (${z})`;
      } else {
        el.textContent = format(t, el.dataset.precision === "ms");
        el.title = z;
      }
    }
  }

  function renderHeader() {
    const button = document.getElementById("tz-toggle");
    const name = document.getElementById("tz-name");
    if (button) {
      button.hidden = false;
      button.setAttribute("aria-pressed", mode === "local" ? "true" : "false");
      button.title = mode === "local" ? "Times are in your local zone; press for UTC" : "Times are in UTC; press for your local zone";
    }
    if (name) name.textContent = zone();
  }

  function setMode(next) {
    mode = next === "local" ? "local" : "utc";
    try {
      localStorage.setItem(KEY, mode);
    } catch {
      /* not kept: this page still switches */
    }
    renderHeader();
    render(document);
    document.dispatchEvent(new CustomEvent("console:timezone", { detail: { mode, zone: zone() } }));
  }

  window.consoleTime = { mode: () => mode, zone, format, hhmm, setMode };

  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("#tz-toggle") : null;
    if (button) setMode(mode === "local" ? "utc" : "local");
  });
  document.addEventListener("DOMContentLoaded", () => {
    renderHeader();
    render(document);
  });
  // Fragments htmx swaps in (live refreshes) arrive in UTC too.
  document.addEventListener("htmx:afterSettle", (e) => render(e.target));
})();
