/**
 * htmx settings for a page under our Content-Security-Policy (script-src 'self', style-src 'self'):
 * no eval (trigger filters, hx-on, js: values), no inline <style> for indicators, no running of
 * <script> in swapped fragments, no page snapshots in localStorage. Responses: 204 leaves the page
 * alone, a 4xx refusal is swapped in for the person who clicked, a 5xx only where console.js says so.
 */
export const HTMX_CONFIG = JSON.stringify({
  allowEval: false,
  allowScriptTags: false,
  includeIndicatorStyles: false,
  historyCacheSize: 0,
  selfRequestsOnly: true,
  responseHandling: [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "4..", swap: true, error: false },
    { code: "...", swap: false, error: true },
  ],
});
