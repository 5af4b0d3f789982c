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
    if (document.hidden && d?.requestConfig && d.requestConfig.verb === "get" && live(e.target)) e.preventDefault();
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
    if (!d?.requestConfig || d.requestConfig.verb === "get") return;
    const target = d.target || d.elt?.closest("section")?.querySelector(".result");
    if (!target || !window.consoleResponses) return;
    const form = d.elt?.closest("form");
    const label = form?.dataset.actionLabel || "The action";
    target.innerHTML = window.consoleResponses.swappableBody(
      599,
      "text/plain",
      `${label} got no answer (${why}). It may still have run: check the audit log before trying again.`,
    );
  };
  document.addEventListener("htmx:sendError", noAnswer("the console could not be reached"));
  document.addEventListener("htmx:timeout", noAnswer("it took too long"));

  // Disclosure buttons (an action's "Force idle…") show and hide the element they control, saying so in aria-expanded;
  // opening one puts the cursor in its first field, so the reason can be typed at once.
  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("[data-disclosure]") : null;
    const panel = button && document.getElementById(button.getAttribute("aria-controls") || "");
    if (!panel) return;
    const open = panel.hidden;
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    const field = open && panel.querySelector("textarea, input:not([type='hidden']), select");
    if (field) field.focus();
  });

  // Axis labels in the zone the reader chose (time.js); UTC when it is not loaded.
  const hhmm = (t) => {
    if (window.consoleTime) return window.consoleTime.hhmm(t);
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? "?" : d.toISOString().slice(11, 16);
  };
  const zoneName = () => (window.consoleTime ? window.consoleTime.zone() : "UTC");
  // Axis titles name the zone and the bucket size (event_rollups: 5 minutes).
  const scales = () => ({
    x: { title: { display: true, text: `Time (${zoneName()})` } },
    y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "Events per 5 min" } },
  });

  // A click on the chart opens the events of the nearest series' 5-minute bucket: exactly what that point counts
  // (the server embeds each series' event types and the bucket width next to the data).
  const openBucket = (canvas) => (_event, elements) => {
    const el = elements?.[0];
    if (!el) return;
    let data;
    try {
      data = JSON.parse(canvas.dataset.chart || "{}");
    } catch {
      return;
    }
    const name = Object.keys(data.series || {})[el.datasetIndex];
    const bucket = Array.isArray(data.buckets) ? data.buckets[el.index] : undefined;
    const types = data.types && name ? data.types[name] : undefined;
    if (typeof bucket !== "number" || !Array.isArray(types) || typeof data.bucketMs !== "number") return;
    const q = new URLSearchParams({ type: types.join(","), since: String(bucket), until: String(bucket + data.bucketMs - 1) });
    window.location.assign(`/events?${q}`);
  };

  // Deploys (data-deploys: [{ version, at }]) as dashed vertical lines at the bucket of each version's first event.
  function deployMarks(canvas) {
    return {
      id: "deployMarks",
      afterDatasetsDraw(chart) {
        let marks;
        let data;
        try {
          marks = JSON.parse(canvas.dataset.deploys || "[]");
          data = JSON.parse(canvas.dataset.chart || "{}");
        } catch {
          return;
        }
        if (!Array.isArray(marks) || !marks.length || !Array.isArray(data.buckets) || !data.buckets.length) return;
        const { ctx, chartArea, scales } = chart;
        ctx.save();
        ctx.strokeStyle = "#495057";
        ctx.fillStyle = "#1b1f24";
        ctx.font = "11px system-ui, sans-serif";
        ctx.setLineDash([4, 3]);
        // Each mark is labelled with its version where the label fits; marks closer than a label's width share
        // the first one's label with a count ("v2 +1"), so a squeezed chart never prints labels over each other.
        const placed = [];
        for (const m of [...marks].sort((a, b) => a.at - b.at)) {
          const i = Math.floor((m.at - data.buckets[0]) / (data.bucketMs || 300000));
          if (i < 0 || i >= data.buckets.length) continue;
          const x = scales.x.getPixelForValue(i);
          ctx.beginPath();
          ctx.moveTo(x, chartArea.top);
          ctx.lineTo(x, chartArea.bottom);
          ctx.stroke();
          const last = placed[placed.length - 1];
          if (last && x - last.x < last.width + 6) last.more++;
          else placed.push({ x, text: String(m.version || "").slice(0, 12), more: 0, width: 0 });
          const p = placed[placed.length - 1];
          p.width = ctx.measureText(p.more ? `${p.text} +${p.more}` : p.text).width;
        }
        for (const p of placed) {
          const text = p.more ? `${p.text} +${p.more}` : p.text;
          const x = Math.min(p.x + 3, chartArea.right - p.width);
          ctx.fillText(text, x, chartArea.top + 10);
        }
        ctx.restore();
      },
    };
  }

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
        label: name,
        data: values,
        borderColor: palette[i % palette.length],
        backgroundColor: palette[i % palette.length],
        tension: 0.2,
        pointRadius: 0,
      }));
      const existing = charts.get(canvas.id);
      // A refresh swaps in a new canvas: the old chart goes with its old canvas.
      if (existing && existing.canvas !== canvas) {
        existing.destroy();
        charts.delete(canvas.id);
      } else if (existing) {
        existing.data.labels = labels;
        existing.data.datasets = datasets;
        existing.options.scales = scales();
        existing.update("none");
        canvas.dataset.zone = zoneName();
        continue;
      }
      // chart.js sizes the canvas through element.style (CSSOM), which style-src 'self' allows; it injects no <style>.
      charts.set(
        canvas.id,
        new window.Chart(canvas, {
          type: "line",
          data: { labels, datasets },
          options: {
            animation: false,
            responsive: true,
            maintainAspectRatio: false,
            scales: scales(),
            interaction: { mode: "nearest", intersect: false },
            // Small legend keys: on a phone four series' legend must leave the plot most of the box.
            plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } } },
            onClick: openBucket(canvas),
          },
          plugins: [deployMarks(canvas)],
        }),
      );
      canvas.dataset.zone = zoneName();
    }
  }
  document.addEventListener("DOMContentLoaded", () => drawCharts(document));
  document.addEventListener("htmx:afterSettle", (e) => drawCharts(e.target));

  // On a narrow screen every list is cards (console.css): each cell is labelled with its column, from the
  // table's own header, so one markup serves both. A cell that already has a label keeps it.
  function labelCells(root) {
    if (!root.querySelectorAll) return;
    const tables = root.matches?.("table") ? [root] : root.querySelectorAll("table");
    for (const table of tables) {
      const heads = [...table.querySelectorAll(":scope > thead > tr > th")];
      if (!heads.length) continue;
      const labels = [];
      for (const th of heads) for (let i = 0; i < (th.colSpan || 1); i++) labels.push(th.textContent.trim());
      for (const row of table.querySelectorAll(":scope > tbody > tr")) {
        let i = 0;
        for (const cell of row.children) {
          if (!cell.hasAttribute("data-label")) cell.setAttribute("data-label", labels[i] ?? "");
          i += cell.colSpan || 1;
        }
      }
    }
  }
  document.addEventListener("DOMContentLoaded", () => labelCells(document));
  // A list's filters and save-view form are folded (details.fold) so a phone's first screen shows rows; a wide
  // screen has room for them, so there they start open.
  document.addEventListener("DOMContentLoaded", () => {
    if (!window.matchMedia?.("(min-width: 720px)").matches) return;
    for (const d of document.querySelectorAll("details.fold")) d.open = true;
  });
  document.addEventListener("htmx:afterSettle", (e) => labelCells(e.target));
  // The reader switched UTC / local: relabel the axes of every chart.
  document.addEventListener("console:timezone", () => drawCharts(document));
})();
