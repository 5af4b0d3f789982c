import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/**
 * A real OTLP/HTTP receiver for tests. It decodes OTLP JSON trace exports and
 * keeps the spans, and it can be told to be slow or down, so tests can check
 * that a bad APM never changes an agent's result.
 *
 * Control (from inside workerd, over loopback):
 *   POST /__mode  {"mode":"ok"|"slow"|"down"}
 *   GET  /__spans → decoded spans so far;  DELETE /__spans clears them
 *   GET  /__stats → { received, pending }
 *
 * It also stands in for a Cloudflare Access team's key endpoint (auth tests), one document per `team`:
 *   POST /__jwks?team=T  body: a JWKS document → served from then on; add `&status=503` to serve that error instead
 *   GET  /__jwks?team=T  → { fetches } (how often the certs URL was fetched for T)
 *   GET  /cdn-cgi/access/certs?team=T → the JWKS document set for T (404 until one is set)
 */
export type DecodedSpan = {
  name: string;
  traceId: string;
  spanId: string;
  service: string;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
};

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

function decodeValue(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(decodeValue);
  return null;
}
const attrs = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, decodeValue(kv.value)]));

/** Decodes an OTLP JSON ExportTraceServiceRequest body into flat spans. Throws on anything that is not one. */
export function decodeOtlpJson(body: string): DecodedSpan[] {
  const req = JSON.parse(body) as { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] };
  if (!Array.isArray(req.resourceSpans)) throw new Error("not an OTLP trace export: resourceSpans missing");
  const out: DecodedSpan[] = [];
  for (const rs of req.resourceSpans) {
    const service = String(attrs(rs.resource?.attributes)["service.name"] ?? "");
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? []) {
        out.push({
          name: String(s.name),
          traceId: String(s.traceId),
          spanId: String(s.spanId),
          service,
          attributes: attrs(s.attributes as KeyValue[]),
          events: ((s.events as { name: string; attributes?: KeyValue[] }[]) ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
        });
      }
  }
  return out;
}

/** A request's whole body as text (the test receivers share it). */
export const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });

/** Starts the receiver on 127.0.0.1 and an ephemeral port. */
export async function startOtlpReceiver(): Promise<{ port: number; server: Server }> {
  let mode: "ok" | "slow" | "down" = "ok";
  let spans: DecodedSpan[] = [];
  let received = 0;
  let pending = 0;
  let lastHeaders: Record<string, unknown> = {};
  const held: (() => void)[] = [];
  const jwks = new Map<string, { doc: string; status: number; fetches: number }>();
  const server = createServer((req, res) => {
    // A client that gives up mid-body (an exporter's timeout) rejects readBody: that is its choice, not our error.
    handle(req, res).catch(() => res.destroy());
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // One request per connection: workerd pools connections, and a pooled one that Node closes as idle
    // (its keep-alive timeout) fails the next request on it with "Network connection lost".
    res.shouldKeepAlive = false;
    const url = new URL(req.url ?? "/", "http://x");
    const json = (code: number, v: unknown) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(JSON.stringify(v));
    };
    if (url.pathname === "/__mode") {
      mode = (JSON.parse(await readBody(req)) as { mode: typeof mode }).mode;
      if (mode !== "slow") for (const release of held.splice(0)) release();
      return json(200, { mode });
    }
    if (url.pathname === "/__spans") {
      if (req.method === "DELETE") spans = [];
      return json(200, spans);
    }
    if (url.pathname === "/__stats") return json(200, { received, pending, lastHeaders });
    if (url.pathname === "/__jwks" || url.pathname === "/cdn-cgi/access/certs") {
      const team = url.searchParams.get("team") ?? "default";
      const entry = jwks.get(team);
      if (url.pathname === "/__jwks" && req.method === "POST") {
        jwks.set(team, { doc: await readBody(req), status: Number(url.searchParams.get("status") ?? 200), fetches: entry?.fetches ?? 0 });
        return json(200, { team });
      }
      if (url.pathname === "/__jwks") return json(200, { fetches: entry?.fetches ?? 0 });
      if (!entry) return json(404, { error: `no JWKS set for team ${team}` });
      entry.fetches++;
      if (entry.status !== 200) return json(entry.status, { error: "unavailable" });
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(entry.doc);
    }
    if (url.pathname !== "/v1/traces" || req.method !== "POST") return json(404, { error: "not found" });
    if (mode === "down") {
      req.socket.destroy();
      return;
    }
    const body = await readBody(req);
    received++;
    lastHeaders = { ...req.headers };
    if (mode === "slow") {
      // Hold the request open until the mode changes: an APM that never answers.
      pending++;
      await new Promise<void>((r) => held.push(r));
      pending--;
    }
    try {
      spans.push(...decodeOtlpJson(body));
      json(200, { partialSuccess: {} });
    } catch (e) {
      json(400, { error: String(e) });
    }
  };
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  if (!addr || typeof addr === "string") throw new Error("receiver did not bind");
  return { port: addr.port, server };
}
