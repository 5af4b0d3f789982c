// What htmx may swap into the page for an answer. Only the console's own HTML fragments go in as HTML:
// they are rendered on the server with every value escaped. Anything else — plain text from the
// platform or an auth refusal, JSON, a whole error page from a proxy — goes in as text, never parsed
// as markup. Kept free of the DOM so the workerd tests load this very file.
((root) => {
  var ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

  function escapeText(s) {
    return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  function asText(message) {
    return `<p class="error-message" role="alert">${escapeText(message)}</p>`;
  }

  /**
   * The HTML to swap in for a response with this status, Content-Type and body.
   * A fragment of ours (text/html, not a whole document) is kept; everything else becomes escaped text.
   */
  function swappableBody(status, contentType, body) {
    var text = body === null || body === undefined ? "" : String(body);
    var html = /^\s*text\/html\b/i.test(contentType || "");
    if (html && !/<html[\s>]|<!doctype/i.test(text)) return text;
    var fallback = status >= 400 ? `The request failed (HTTP ${status}).` : "";
    // A whole page here is not ours (our htmx answers are fragments): say what failed, show none of it.
    if (html) return asText(fallback || "The console answered with a whole page where a part was expected.");
    return asText(text.trim() || fallback);
  }

  root.consoleResponses = { swappableBody: swappableBody, escapeText: escapeText };
})(globalThis);
