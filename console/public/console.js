// Client behaviour the server cannot render: live refresh that pauses while the tab is hidden,
// errors shown as text, the action disclosures, and charts drawn from JSON the server embedded
// (never from HTML). No inline script or handler exists on our pages: the CSP forbids them, so
// everything the page does is wired here. htmx settings come from <meta name="htmx-config">.
(() => {
  const live = (el) => el instanceof Element && el.closest("[data-live]");

  // Live views poll with hx-trigger="every Ns, refresh". A poll while the tab is hidden is cancelled
  // here (htmx trigger filters like [!document.hidden] need eval, which the CSP forbids)...
  document.addEventListener("htmx:beforeRequest", (e) => {
    const d = e.detail;
    if (document.hidden && d && d.requestConfig && d.requestConfig.verb === "get" && live(e.target)) e.preventDefault();
  });
  // ...and when the tab comes back, every live view refreshes at once.
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && window.htmx) {
      for (const el of document.querySelectorAll("[data-live]")) window.htmx.trigger(el, "refresh");
    }
  });

  // What reaches the page is our escaped HTML or text, never someone else's markup (response-text.js).
  document.addEventListener("htmx:beforeSwap", (e) => {
    const d = e.detail;
    const status = d.xhr.status;
    // An action's server error (agent unavailable, timeout) is for the person who clicked; a poll's keeps the last good view.
    if (status >= 500 && d.requestConfig && d.requestConfig.verb !== "get") {
      d.shouldSwap = true;
    }
    if (d.shouldSwap && window.consoleResponses) {
      d.serverResponse = window.consoleResponses.swappableBody(status, d.xhr.getResponseHeader("Content-Type"), d.serverResponse);
    }
  });

  // An action that got no answer at all (network failure, or no answer within its hx-request timeout) swaps
  // nothing by itself: say so where its result would have gone, so no failed action goes unnoticed.
  const noAnswer = (why) => (e) => {
    const d = e.detail;
    if (!d || !d.requestConfig || d.requestConfig.verb === "get") return;
    const target = d.target || (d.elt && d.elt.closest("section") && d.elt.closest("section").querySelector(".result"));
    if (!target || !window.consoleResponses) return;
    const form = d.elt && d.elt.closest("form");
    const label = (form && form.dataset.actionLabel) || "The action";
    target.innerHTML = window.consoleResponses.swappableBody(599, "text/plain", `${label} got no answer (${why}). It may still have run: check the audit log before trying again.`);
  };
  document.addEventListener("htmx:sendError", noAnswer("the console could not be reached"));
  document.addEventListener("htmx:timeout", noAnswer("it took too long"));

  // A button inside <summary> does not toggle its <details>; these buttons do.
  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("[data-toggle-details]") : null;
    const details = button && button.closest("details");
    if (!details) return;
    details.toggleAttribute("open");
    // Opening an action goes straight to its first field (the reason, or the first choice): no extra click to start typing.
    if (details.open) {
      const field = details.querySelector("form input:not([type=hidden]), form textarea, form select");
      if (field) field.focus();
    }
  });

  const hhmm = (t) => {
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? "?" : d.toISOString().slice(11, 16);
  };

  const charts = new Map();
  function drawCharts(root) {
    if (!window.Chart || !root.querySelectorAll) return;
    for (const canvas of root.querySelectorAll("canvas[data-chart]")) {
      let data;
      try {
        data = JSON.parse(canvas.dataset.chart || "{}");
      } catch {
        continue;
      }
      if (!Array.isArray(data.buckets) || !data.series || typeof data.series !== "object") continue;
      const labels = data.buckets.map(hhmm);
      const palette = ["#d9480f", "#1c7ed6", "#2b8a3e", "#862e9c", "#e67700"];
      const datasets = Object.entries(data.series).map(([name, values], i) => ({
        label: name, data: values, borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length], tension: 0.2, pointRadius: 0,
      }));
      const existing = charts.get(canvas.id);
      // A refresh swaps in a new canvas: the old chart goes with its old canvas.
      if (existing && existing.canvas !== canvas) {
        existing.destroy();
        charts.delete(canvas.id);
      } else if (existing) {
        existing.data.labels = labels;
        existing.data.datasets = datasets;
        existing.update("none");
        continue;
      }
      // chart.js sizes the canvas through element.style (CSSOM), which style-src 'self' allows; it injects no <style>.
      charts.set(canvas.id, new window.Chart(canvas, { type: "line", data: { labels, datasets }, options: { animation: false, responsive: true, maintainAspectRatio: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } } }));
    }
  }
  document.addEventListener("DOMContentLoaded", () => drawCharts(document));
  document.addEventListener("htmx:afterSettle", (e) => drawCharts(e.target));
})();
