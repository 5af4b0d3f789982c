/**
 * Where spans go. Declared here, apart from the exporter, so the package's public types never reach the
 * OpenTelemetry SDK's (which pull in Node's typings and would change a user's Worker types).
 */
export type OtlpTarget = { url: string; headers?: Record<string, string> };

/**
 * Parses OTLP headers in the standard OTEL_EXPORTER_OTLP_HEADERS form
 * (`key=value,key2=value2`, values URL-encoded), or as a JSON object.
 */
export function parseOtlpHeaders(raw: string | undefined | null): Record<string, string> {
  if (!raw?.trim()) return {};
  const text = raw.trim();
  if (text.startsWith("{")) {
    try {
      const obj = JSON.parse(text) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(obj).filter(([, v]) => typeof v === "string")) as Record<string, string>;
    } catch {
      return {};
    }
  }
  const out: Record<string, string> = {};
  for (const pair of text.split(",")) {
    const i = pair.indexOf("=");
    if (i <= 0) continue;
    const key = pair.slice(0, i).trim();
    const value = pair.slice(i + 1).trim();
    try {
      out[key] = decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}

/** Reads the OTLP target from env vars/secrets; null when no endpoint is set (export off). */
export function otlpTargetFromEnv(env: Record<string, unknown>, endpointVar = "OTLP_ENDPOINT", headersVar = "OTLP_HEADERS"): OtlpTarget | null {
  const url = env[endpointVar];
  if (typeof url !== "string" || !/^https?:\/\//.test(url.trim())) return null;
  return { url: url.trim(), headers: parseOtlpHeaders(env[headersVar] as string | undefined) };
}
