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
  /** Forgets every cached key set. */
  clear(): void;
};

type Entry = { keys: Map<string, CryptoKey>; fetchedAt: number; expiresAt: number };

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

/** Creates a JWKS cache. One module-level instance (`defaultJwksCache`) serves the Worker; tests make their own. */
export function createJwksCache(options: JwksCacheOptions = {}): JwksCache {
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const minRefetchMs = options.minRefetchIntervalMs ?? 10_000;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const entries = new Map<string, Entry>();

  return {
    async getKey(url, kid) {
      const cached = entries.get(url);
      const now = Date.now();
      if (cached && now < cached.expiresAt) {
        const key = cached.keys.get(kid);
        if (key || now - cached.fetchedAt < minRefetchMs) return key;
      }
      try {
        const keys = await loadKeys(url, timeoutMs, doFetch);
        const fetchedAt = Date.now();
        entries.set(url, { keys, fetchedAt, expiresAt: fetchedAt + ttlMs });
        return keys.get(kid);
      } catch (e) {
        // Keys rotate slowly: while the endpoint is down, keep trusting the last set we saw, and retry later.
        const stale = cached?.keys.get(kid);
        if (cached && stale) {
          cached.fetchedAt = now;
          cached.expiresAt = now + minRefetchMs;
          console.warn(`[auth] ${e instanceof Error ? e.message : String(e)}; using the cached signing keys`);
          return stale;
        }
        throw e;
      }
    },
    clear() {
      entries.clear();
    },
  };
}

/** The Worker's shared cache (per isolate). */
export const defaultJwksCache: JwksCache = createJwksCache();
