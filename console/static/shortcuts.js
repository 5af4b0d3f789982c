// Keyboard shortcuts for every console page, and their help overlay (server-rendered, hidden, in the layout):
//   ?        shows the help; Escape (or its Close button) hides it
//   /        puts the cursor in the header's search box (#global-search), when the page has one
//   g o, g i, g r, g s   go to the overview, incidents, runs, sessions
//   j / k    select the next / previous row of the page's list; Enter opens the selected row's first link
// Nothing fires while someone types in a field, or with Ctrl, Alt or Meta held (those belong to the browser).
// Wired here because the CSP forbids inline scripts and handlers.
(() => {
  const GO = { o: "/", i: "/incidents", r: "/runs", s: "/sessions" };
  /** How long `g` waits for its second key. */
  const SEQUENCE_MS = 1500;

  const help = () => document.getElementById("shortcut-help");
  const helpOpen = () => {
    const h = help();
    return Boolean(h && !h.hidden);
  };
  let returnFocus = null;

  function openHelp() {
    const h = help();
    if (!h) return;
    returnFocus = document.activeElement;
    h.hidden = false;
    const close = h.querySelector("[data-close-shortcut-help]");
    if (close) close.focus();
  }

  function closeHelp() {
    const h = help();
    if (!h || h.hidden) return;
    h.hidden = true;
    if (returnFocus && typeof returnFocus.focus === "function" && document.contains(returnFocus)) returnFocus.focus();
    returnFocus = null;
  }

  /** Typing in a field, or anywhere editable, is never a shortcut. */
  function typing(target) {
    if (!(target instanceof Element)) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable]:not([contenteditable='false'])"));
  }

  /**
   * The page's main list: a table marked data-list (a list that refreshes itself is in a live region and is marked),
   * else, on a page with no live region, the first table placed directly in <main>. A page with a live region and no
   * marked table (nothing stuck right now) has nothing to walk: not the table beside it (the stuck thresholds), nor
   * the overview's tables, which sit in its live panel and are not lists to walk. Read at each key press: a refresh
   * replaces the rows.
   */
  function listRows() {
    const table =
      document.querySelector("main table[data-list]") || (document.querySelector("main [data-live]") ? null : document.querySelector("main > table"));
    return table ? [...table.querySelectorAll(":scope > tbody > tr")] : [];
  }

  let selected = -1;

  function select(delta) {
    const rows = listRows();
    if (!rows.length) return false;
    for (const r of rows) r.classList.remove("kb-selected");
    selected = selected < 0 ? (delta > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, selected + delta));
    const row = rows[selected];
    row.classList.add("kb-selected");
    // Focus goes to the row's first link, so screen readers announce the row and Enter opens it natively.
    const link = row.querySelector("a[href]");
    if (link) link.focus();
    row.scrollIntoView({ block: "nearest" });
    return true;
  }

  function openSelected() {
    const row = listRows()[selected];
    const link = row?.classList.contains("kb-selected") && row.querySelector("a[href]");
    if (!link) return false;
    window.location.assign(link.href);
    return true;
  }

  let pendingG = 0;

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    if (helpOpen()) {
      if (e.key === "Escape") {
        e.preventDefault();
        closeHelp();
      } else if (e.key === "Tab") {
        // The help is modal: focus stays on its Close button.
        e.preventDefault();
        const close = help().querySelector("[data-close-shortcut-help]");
        if (close) close.focus();
      }
      return;
    }
    if (typing(e.target)) return;

    if (pendingG && Date.now() - pendingG < SEQUENCE_MS) {
      pendingG = 0;
      if (Object.hasOwn(GO, e.key)) {
        e.preventDefault();
        window.location.assign(GO[e.key]);
        return;
      }
    }
    pendingG = 0;

    switch (e.key) {
      case "?":
        e.preventDefault();
        openHelp();
        return;
      case "/": {
        const search = document.getElementById("global-search");
        if (!search) return;
        e.preventDefault();
        search.focus();
        if (typeof search.select === "function") search.select();
        return;
      }
      case "g":
        pendingG = Date.now();
        return;
      case "j":
      case "k":
        if (select(e.key === "j" ? 1 : -1)) e.preventDefault();
        return;
      case "Enter": {
        // A focused link or button does its own thing; Enter elsewhere opens the selected row.
        const active = document.activeElement;
        if (active instanceof Element && active !== document.body && active.closest("a[href], button, summary")) return;
        if (openSelected()) e.preventDefault();
        return;
      }
    }
  });

  document.addEventListener("click", (e) => {
    if (!(e.target instanceof Element)) return;
    // The Close button, or a click on the dimmed backdrop around the help.
    if (e.target.closest("[data-close-shortcut-help]") || e.target === help()) closeHelp();
  });
})();
