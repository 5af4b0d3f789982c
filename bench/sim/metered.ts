/**
 * Bindings that count what the code under test asks of them, without changing what it gets: D1's own
 * `meta.rows_written` / `meta.rows_read` (every index entry counts, as D1 bills), and R2's billed operation
 * classes. The simulator hands them to the real Queue handler in place of env.DB and env's buckets, so it
 * measures whatever ingest does without knowing its tables.
 */

export type D1Meter = { rowsWritten: number; rowsRead: number; statements: number; roundTrips: number };

type Wrapped = D1PreparedStatement & { readonly real: D1PreparedStatement };

/** A D1Database that runs everything on `real` and adds each result's meta to `meter`. */
export function meteredDb(real: D1Database, meter: D1Meter): D1Database {
  const add = (rs: D1Result[]) => {
    meter.roundTrips++;
    for (const r of rs) {
      meter.statements++;
      meter.rowsWritten += Number(r.meta?.rows_written ?? 0);
      meter.rowsRead += Number(r.meta?.rows_read ?? 0);
    }
  };
  const wrap = (r: D1PreparedStatement): Wrapped => {
    const all = async <T>() => {
      const res = await r.all<T>();
      add([res]);
      return res;
    };
    return {
      real: r,
      bind: (...a: unknown[]) => wrap(r.bind(...a)),
      all,
      run: all,
      // D1's first() runs the whole statement and keeps row 0; all() does the same work and gives its meta.
      first: (async (col?: string) => {
        const row = (await all<Record<string, unknown>>()).results[0];
        return row === undefined ? null : col ? (row[col] ?? null) : row;
      }) as D1PreparedStatement["first"],
      raw: (async (opts?: { columnNames?: boolean }) => {
        const res = await all<Record<string, unknown>>();
        const rows = res.results.map((row) => Object.values(row));
        return opts?.columnNames ? [Object.keys(res.results[0] ?? {}), ...rows] : rows;
      }) as D1PreparedStatement["raw"],
    } as unknown as Wrapped;
  };
  return {
    prepare: (sql: string) => wrap(real.prepare(sql)),
    batch: async <T>(ss: D1PreparedStatement[]) => {
      const res = await real.batch<T>(ss.map((s) => (s as Wrapped).real ?? s));
      add(res);
      return res;
    },
    exec: (sql: string) => real.exec(sql),
    withSession: (c?: string) => real.withSession(c as never),
    dump: () => real.dump(),
  } as unknown as D1Database;
}

export type R2Meter = { classA: number; classB: number; bytesPut: number };

const CLASS_A = new Set(["put", "delete", "list", "createMultipartUpload", "resumeMultipartUpload"]);
const CLASS_B = new Set(["get", "head"]);

/**
 * Recognises an R2 bucket binding by its class name: service bindings answer every property name with an RPC
 * function, so checking for `put`/`list` would take them for buckets.
 */
export function isR2Bucket(v: unknown): v is R2Bucket {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v)?.constructor?.name === "R2Bucket";
}

/** An R2 bucket that counts Class A (writes, lists) and Class B (reads) operations and the bytes put. */
export function meteredR2(real: R2Bucket, meter: R2Meter): R2Bucket {
  return new Proxy(real, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || typeof prop !== "string") return v;
      return (...args: unknown[]) => {
        if (CLASS_A.has(prop)) meter.classA++;
        if (CLASS_B.has(prop)) meter.classB++;
        if (prop === "put") {
          const body = args[1];
          meter.bytesPut +=
            typeof body === "string"
              ? new TextEncoder().encode(body).byteLength
              : body instanceof ArrayBuffer || ArrayBuffer.isView(body)
                ? body.byteLength
                : 0;
        }
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** `env` with its D1 database and every R2 bucket metered; the names of the buckets it found. */
export function meteredEnv<E extends { DB: D1Database }>(env: E, d1: D1Meter, r2: R2Meter): { env: E; buckets: string[] } {
  const out: Record<string, unknown> = { ...env, DB: meteredDb(env.DB, d1) };
  const buckets: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (isR2Bucket(v)) {
      out[k] = meteredR2(v, r2);
      buckets.push(k);
    }
  }
  return { env: out as E, buckets };
}
