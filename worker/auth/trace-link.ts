/**
 * APM_TRACE_URL, the link template to the user's APM (`https://apm.example.com/trace/{traceId}`). It ends
 * up in `href`s, so only an http(s) URL is used; anything else (a `javascript:` or `data:` URL, a typo) is
 * refused (worker/config.ts parses it with this check).
 */

export const TRACE_ID_PLACEHOLDER = "{traceId}";

export type TraceLinkSetting = { template: string | null; warning: string | null };

const UNSAFE_CHARS = /[\s\p{Cc}\p{Cf}]/u;

/** Validates APM_TRACE_URL: unset → no links; an http(s) URL containing `{traceId}` → the template; else a warning. */
export function readTraceLinkSetting(raw: string | undefined): TraceLinkSetting {
  const value = raw?.trim() ?? "";
  if (!value) return { template: null, warning: null };
  const refuse = (why: string): TraceLinkSetting => ({
    template: null,
    warning: `APM_TRACE_URL is ignored: it ${why} (expected e.g. https://apm.example.com/trace/${TRACE_ID_PLACEHOLDER}); trace ids are shown without links.`,
  });
  // Browsers drop spaces and control characters inside URLs, so "java\tscript:" would still run: refuse them outright.
  if (UNSAFE_CHARS.test(value)) return refuse("contains spaces or control characters");
  if (!value.includes(TRACE_ID_PLACEHOLDER)) return refuse(`has no ${TRACE_ID_PLACEHOLDER} placeholder`);
  let url: URL;
  try {
    url = new URL(value.replaceAll(TRACE_ID_PLACEHOLDER, "0"));
  } catch {
    return refuse("is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse(`is a ${url.protocol} URL, and only http(s) links are rendered`);
  if (url.username || url.password) return refuse("carries a user name or password");
  return { template: value, warning: null };
}
