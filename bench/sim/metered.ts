/**
 * Bindings that count what the code under test asks of them, without changing what it gets: D1's own
 * `meta.rows_written` / `meta.rows_read` (every index entry counts, as D1 bills), and R2's billed operation
 * classes. The simulator hands them to the real Queue handler in place of env.DB and env's buckets, so it
 * measures whatever ingest does without knowing its tables.
 */

/** What the statements of one kind (statementKind) cost, summed. */
export type StatementCost = {
  rowsWritten: number;
  rowsRead: number;
  statements: number /** Rows the statements changed (meta.changes): rowsWritten / changes is their index amplification. */;
  changes: number;
};

export type D1Meter = {
  rowsWritten: number;
  rowsRead: number;
  statements: number;
  roundTrips: number;
  /** The same sums per statement kind (statementKind), when the meter was made with one (newD1Meter). */
  byKind?: Map<string, StatementCost>;
};

/** An empty meter that also tells its sums per statement kind. */
export const newD1Meter = (): D1Meter => ({ rowsWritten: 0, rowsRead: 0, statements: 0, roundTrips: 0, byKind: new Map() });

/**
 * A short name for what a statement does, read from its SQL without knowing the tables: the verb and table
 * (`insert runs`, `update agents`, `delete event_segments`, `select …`), and for an upsert the first column its
 * DO UPDATE sets (ingest's projections run one upsert per unit of indexed columns: each is told apart).
 */
export function statementKind(sql: string): string {
  const s = sql.replace(/\s+/g, " ").trim();
  const ins = /^INSERT(?: OR \w+)? INTO "?(\w+)"?/i.exec(s);
  if (ins) {
    const set = / DO UPDATE SET "?(\w+)"?/i.exec(s);
    return set ? `upsert ${ins[1]} (set ${set[1]}…)` : / DO NOTHING/i.test(s) ? `insert ${ins[1]} (or nothing)` : `insert ${ins[1]}`;
  }
  const upd = /^UPDATE "?(\w+)"?/i.exec(s);
  if (upd) return `update ${upd[1]}`;
  const del = /^DELETE FROM "?(\w+)"?/i.exec(s);
  if (del) return `delete ${del[1]}`;
  const from = / FROM "?(\w+)"?/i.exec(s);
  return `${s.split(" ")[0]!.toLowerCase()}${from ? ` ${from[1]}` : ""}`;
}

type Wrapped = D1PreparedStatement & { readonly real: D1PreparedStatement; readonly sql: string };

/** A D1Database that runs everything on `real` and adds each result's meta to `meter` (and to its kind's sums). */
export function meteredDb(real: D1Database, meter: D1Meter): D1Database {
  const add = (rs: D1Result[], sqls: string[]) => {
    meter.roundTrips++;
    rs.forEach((r, i) => {
      const w = Number(r.meta?.rows_written ?? 0);
      const rd = Number(r.meta?.rows_read ?? 0);
      meter.statements++;
      meter.rowsWritten += w;
      meter.rowsRead += rd;
      if (!meter.byKind) return;
      const kind = statementKind(sqls[i] ?? "");
      const c = meter.byKind.get(kind) ?? { rowsWritten: 0, rowsRead: 0, statements: 0, changes: 0 };
      c.changes += Number(r.meta?.changes ?? 0);
      c.rowsWritten += w;
      c.rowsRead += rd;
      c.statements++;
      meter.byKind.set(kind, c);
    });
  };
  const wrap = (r: D1PreparedStatement, sql: string): Wrapped => {
    const all = async <T>() => {
      const res = await r.all<T>();
      add([res], [sql]);
      return res;
    };
    return {
      real: r,
      sql,
      bind: (...a: unknown[]) => wrap(r.bind(...a), sql),
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
    prepare: (sql: string) => wrap(real.prepare(sql), sql),
    batch: async <T>(ss: D1PreparedStatement[]) => {
      const res = await real.batch<T>(ss.map((s) => (s as Wrapped).real ?? s));
      add(
        res,
        ss.map((s) => (s as Wrapped).sql ?? ""),
      );
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
