// Client behaviour the server cannot render: live refresh that pauses while the tab is hidden,
// and charts drawn from JSON the server embedded (never from HTML).
(() => {
  // Refusals (4xx) carry a message meant for the person who clicked: swap them in like successes.
  document.addEventListener("htmx:load", () => {
    if (window.htmx && !window.htmx.config.__consoleResponses) {
      window.htmx.config.responseHandling = [
        { code: "204", swap: false },
        { code: "[23]..", swap: true },
        { code: "4..", swap: true, error: false },
        { code: "...", swap: false, error: true },
      ];
      window.htmx.config.__consoleResponses = true;
    }
  });

  // htmx polls with hx-trigger="every Ns [!document.hidden]"; when the tab comes back, refresh at once.
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && window.htmx) {
      for (const el of document.querySelectorAll("[data-live]")) window.htmx.trigger(el, "refresh");
    }
  });

  const charts = new Map();
  function drawCharts(root) {
    if (!window.Chart) return;
    for (const canvas of root.querySelectorAll("canvas[data-chart]")) {
      let data;
      try {
        data = JSON.parse(canvas.dataset.chart || "{}");
      } catch {
        continue;
      }
      if (!data.buckets) continue;
      const labels = data.buckets.map((t) => new Date(t).toISOString().slice(11, 16));
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
      charts.set(canvas.id, new window.Chart(canvas, { type: "line", data: { labels, datasets }, options: { animation: false, responsive: true, maintainAspectRatio: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } } }));
    }
  }
  document.addEventListener("DOMContentLoaded", () => drawCharts(document));
  document.addEventListener("htmx:afterSettle", (e) => drawCharts(e.target));
})();
