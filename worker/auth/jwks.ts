import { z } from "zod";

/** The parts of a JWKS document we use; other members (Access also sends `public_cert(s)`) are ignored. */
const JwksSchema = z.object({
  keys: z.array(
    z.looseObject({
      kty: z.string(),
      kid: z.string().optional(),
      use: z.string().optional(),
      alg: z.string().optional(),
      n: z.string().optional(),
      e: z.string().optional(),
    }),
  ),
});

/** Raised when the signing keys cannot be fetched and no usable cached copy exists. */
export class JwksUnavailableError extends Error {
  override name = "JwksUnavailableError";
}

export type JwksCacheOptions = {
  /** How long a fetched key set is trusted before it is fetched again. Default 10 minutes. */
  ttlMs?: number;
  /** Least time between two fetches of one URL caused by unknown `kid`s, so random kids cannot make us hammer the endpoint. Default 10 s. */
  minRefetchIntervalMs?: number;
  /** How long a kid that a fresh fetch did not hold is answered "unknown" without asking again. Default 60 s. */
  unknownKidTtlMs?: number;
  /** How long after a failed fetch no new fetch is tried (cached keys are still used). Default 10 s. */
  failureBackoffMs?: number;
  /** Fetch timeout. Default 5 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
};

/** In-memory cache of imported RS256 verification keys, per JWKS URL. */
export type JwksCache = {
  /**
   * The key with this `kid` published at `url`, fetching the set when it is missing, stale, or does not
   * hold the kid. `undefined` when the fresh set does not hold it. Throws `JwksUnavailableError` when
   * the set cannot be fetched and no cached copy holds the kid.
   */
  getKey(url: string, kid: string): Promise<CryptoKey | undefined>;
  /** Forgets every cached key set, failure and pending fetch. */
  clear(): void;
};

type Entry = {
  keys: Map<string, CryptoKey>;
  fetchedAt: number;
  expiresAt: number;
  /** Kids this set did not hold when asked, until when that answer stands (bounded: see MAX_UNKNOWN_KIDS). */
  unknownKids: Map<string, number>;
};

/** Negative-cache entries kept per URL; random kids beyond this evict the oldest. */
const MAX_UNKNOWN_KIDS = 1024;

const RS256 = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;

async function loadKeys(url: string, timeoutMs: number, doFetch: typeof fetch): Promise<Map<string, CryptoKey>> {
  let res: Response;
  try {
    res = await doFetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new JwksUnavailableError(`fetching ${url} failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new JwksUnavailableError(`fetching ${url} answered HTTP ${res.status}`);
  }
  const parsed = JwksSchema.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success) throw new JwksUnavailableError(`${url} did not return a JWKS document`);

  const keys = new Map<string, CryptoKey>();
  for (const jwk of parsed.data.keys) {
    if (jwk.kty !== "RSA" || !jwk.kid || !jwk.n || !jwk.e) continue;
    if (jwk.use !== undefined && jwk.use !== "sig") continue;
    if (jwk.alg !== undefined && jwk.alg !== "RS256") continue;
    try {
      const key = await crypto.subtle.importKey("jwk", { kty: "RSA", n: jwk.n, e: jwk.e, alg: "RS256", ext: true }, RS256, false, ["verify"]);
      keys.set(jwk.kid, key);
    } catch {
      // A malformed key in the set must not hide the good ones.
    }
  }
  if (keys.size === 0) throw new JwksUnavailableError(`${url} holds no usable RS256 signing key`);
  return keys;
}

/**
 * Creates a JWKS cache. One module-level instance (`defaultJwksCache`) serves the Worker; tests make their own.
 *
 * Fetches are single-flight: concurrent requests that need the same URL share one fetch. Unknown kids are
 * cached negatively (a fresh set that lacks a kid answers "unknown" for `unknownKidTtlMs`, and any unknown
 * kid refetches at most once per `minRefetchIntervalMs`), and a failed fetch is retried only after
 * `failureBackoffMs`, so an outage or a flood of forged kids costs the endpoint one request at a time.
 */
export function createJwksCache(options: JwksCacheOptions = {}): JwksCache {
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const minRefetchMs = options.minRefetchIntervalMs ?? 10_000;
  const unknownKidTtlMs = options.unknownKidTtlMs ?? 60_000;
  const failureBackoffMs = options.failureBackoffMs ?? 10_000;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const entries = new Map<string, Entry>();
  const failures = new Map<string, { retryAt: number; message: string }>();
  const inflight = new Map<string, Promise<Map<string, CryptoKey>>>();

  /** Starts a fetch of `url`, or joins the one under way. */
  function load(url: string): Promise<Map<string, CryptoKey>> {
    const pending = inflight.get(url);
    if (pending) return joinWithin(pending, url);
    const started = loadKeys(url, timeoutMs, doFetch).then(
      (keys) => {
        const fetchedAt = Date.now();
        entries.set(url, { keys, fetchedAt, expiresAt: fetchedAt + ttlMs, unknownKids: new Map() });
        failures.delete(url);
        return keys;
      },
      (e: unknown) => {
        failures.set(url, { retryAt: Date.now() + failureBackoffMs, message: e instanceof Error ? e.message : String(e) });
        throw e;
      },
    );
    const tracked = started.finally(() => {
      if (inflight.get(url) === tracked) inflight.delete(url);
    });
    inflight.set(url, tracked);
    return tracked;
  }

  /**
   * Waits for another request's fetch, but not forever: in workerd, a fetch belongs to the request that
   * started it, and if that request is cancelled the shared promise may never settle. A joiner gives up
   * after the fetch timeout (plus a margin) and drops the stuck fetch, so the next request starts afresh.
   */
  async function joinWithin(pending: Promise<Map<string, CryptoKey>>, url: string): Promise<Map<string, CryptoKey>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (inflight.get(url) === pending) inflight.delete(url);
        reject(new JwksUnavailableError(`fetching ${url} did not finish within ${timeoutMs} ms`));
      }, timeoutMs + 1_000);
    });
    try {
      return await Promise.race([pending, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  function rememberUnknown(url: string, kid: string) {
    const entry = entries.get(url);
    if (!entry) return;
    if (entry.unknownKids.size >= MAX_UNKNOWN_KIDS) entry.unknownKids.delete(entry.unknownKids.keys().next().value!);
    entry.unknownKids.set(kid, Date.now() + unknownKidTtlMs);
  }

  return {
    async getKey(url, kid) {
      const now = Date.now();
      const cached = entries.get(url);
      const failure = failures.get(url);
      const backingOff = failure !== undefined && now < failure.retryAt;

      if (cached && now < cached.expiresAt) {
        const key = cached.keys.get(kid);
        if (key) return key;
        // A fresh set that lacks the kid is the answer while refetching is rate-limited, negatively cached, or backing off.
        if (now - cached.fetchedAt < minRefetchMs || (cached.unknownKids.get(kid) ?? 0) > now || backingOff) return undefined;
      } else if (backingOff) {
        const stale = cached?.keys.get(kid);
        if (stale) return stale;
        throw new JwksUnavailableError(`${failure.message} (not retried for ${Math.ceil((failure.retryAt - now) / 1000)} s)`);
      }

      try {
        const keys = await load(url);
        const key = keys.get(kid);
        if (!key) rememberUnknown(url, kid);
        return key;
      } catch (e) {
        // Keys rotate slowly: while the endpoint is down, keep trusting the last set we saw (retried after the backoff).
        const stale = entries.get(url)?.keys.get(kid);
        if (stale) {
          console.warn(`[auth] ${e instanceof Error ? e.message : String(e)}; using the cached signing keys`);
          return stale;
        }
        throw e;
      }
    },
    clear() {
      entries.clear();
      failures.clear();
      inflight.clear();
    },
  };
}

/** The Worker's shared cache (per isolate). */
export const defaultJwksCache: JwksCache = createJwksCache();
