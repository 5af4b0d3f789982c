/**
 * htmx settings for a page under our Content-Security-Policy (script-src 'self', style-src 'self'):
 * no eval (trigger filters, hx-on, js: values), no inline <style> for indicators, no running of
 * <script> in swapped fragments, no page snapshots in localStorage. Settling copies no `style`
 * attribute: htmx's default settle copies class, style, width and height from an old element onto the
 * new one with the same id by setAttribute, and chart.js's canvas carries a style attribute (set through
 * CSSOM, which the CSP allows); copying it by setAttribute is an inline style, which style-src 'self'
 * refuses, once per refresh of the overview. Responses: 204 leaves the page
 * alone, a 4xx refusal is swapped in for the person who clicked, a 5xx only where console.js says so.
 */
export const HTMX_CONFIG = JSON.stringify({
  allowEval: false,
  allowScriptTags: false,
  includeIndicatorStyles: false,
  attributesToSettle: ["class", "width", "height"],
  historyCacheSize: 0,
  selfRequestsOnly: true,
  responseHandling: [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "4..", swap: true, error: false },
    { code: "...", swap: false, error: true },
  ],
});
