import { createServer, type Server } from "node:http";
import { readBody } from "./otlp-receiver";

/**
 * A real webhook receiver for alert tests: it records every POST to /hook/<channel> and answers 200,
 * unless told to fail. Tests in different files share it, so everything is selected by a `match`
 * string (a test's unique agent name) that must occur in the request body.
 *
 * Control (from inside workerd, over loopback):
 *   POST /__fail {"match": "…", "channel": "webhook"|"slack", "times": N, "status": 503}
 *        → the next N matching requests on that channel get `status` (0: the connection is dropped)
 *   GET  /__requests?match=… → [{ channel, contentType, body (parsed JSON), at }]
 */
export type ReceivedAlert = { channel: string; contentType: string; body: unknown; at: number };

/** Starts the receiver on 127.0.0.1 and an ephemeral port. */
export async function startAlertReceiver(): Promise<{ port: number; server: Server }> {
  const received: (ReceivedAlert & { raw: string })[] = [];
  const failures: { match: string; channel: string; times: number; status: number }[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      res.shouldKeepAlive = false;
      const url = new URL(req.url ?? "/", "http://x");
      const json = (code: number, v: unknown) => {
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify(v));
      };
      if (url.pathname === "/__fail" && req.method === "POST") {
        const f = JSON.parse(await readBody(req)) as { match: string; channel: string; times: number; status?: number };
        failures.push({ match: f.match, channel: f.channel, times: f.times, status: f.status ?? 503 });
        return json(200, { ok: true });
      }
      if (url.pathname === "/__requests") {
        const match = url.searchParams.get("match") ?? "";
        return json(
          200,
          received.filter((r) => r.raw.includes(match)).map(({ raw: _raw, ...r }) => r),
        );
      }
      const hook = /^\/hook\/([a-z]+)$/.exec(url.pathname);
      if (!hook || req.method !== "POST") return json(404, { error: "not found" });
      const channel = hook[1]!;
      const raw = await readBody(req);
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      received.push({ channel, contentType: String(req.headers["content-type"] ?? ""), body, at: Date.now(), raw });
      const failure = failures.find((f) => f.channel === channel && f.times > 0 && raw.includes(f.match));
      if (failure) {
        failure.times--;
        if (failure.status === 0) return void req.socket.destroy();
        return json(failure.status, { error: "told to fail" });
      }
      return json(200, { ok: true });
    })().catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  if (!addr || typeof addr === "string") throw new Error("alert receiver did not bind");
  return { port: addr.port, server };
}
