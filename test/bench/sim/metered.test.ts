import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type D1Meter, meteredEnv, newD1Meter, type R2Meter } from "../../../bench/sim/metered";

// The simulator hands the real consumer these bindings: they must count what D1 and R2 bill, and change nothing.

const fresh = () => ({ d1: { rowsWritten: 0, rowsRead: 0, statements: 0, roundTrips: 0 } as D1Meter, r2: { classA: 0, classB: 0, bytesPut: 0 } as R2Meter });

describe("metered bindings", () => {
  it("sum D1's own rows written and read over batches and single statements, results unchanged", async () => {
    const m = fresh();
    const { env: e } = meteredEnv(env, m.d1, m.r2);
    await e.DB.prepare("CREATE TABLE IF NOT EXISTS sim_meter_probe (id INTEGER PRIMARY KEY, v TEXT)").run();
    const before = { ...m.d1 };
    await e.DB.batch([
      e.DB.prepare("INSERT INTO sim_meter_probe (v) VALUES (?)").bind("a"),
      e.DB.prepare("INSERT INTO sim_meter_probe (v) VALUES (?)").bind("b"),
    ]);
    expect(m.d1.rowsWritten - before.rowsWritten).toBe(2);
    const row = await e.DB.prepare("SELECT COUNT(*) AS n FROM sim_meter_probe").first<{ n: number }>();
    expect(row?.n).toBe(2);
    expect(m.d1.rowsRead).toBeGreaterThan(before.rowsRead);
    expect(m.d1.statements - before.statements).toBe(3);
  });

  it("tell the same sums per statement kind: verb and table, and an upsert by the first column it sets", async () => {
    const d1 = newD1Meter();
    const { env: e } = meteredEnv(env, d1, { classA: 0, classB: 0, bytesPut: 0 });
    await e.DB.prepare("CREATE TABLE IF NOT EXISTS sim_kind_probe (id INTEGER PRIMARY KEY, v TEXT, w TEXT)").run();
    await e.DB.batch([
      e.DB.prepare("INSERT INTO sim_kind_probe (id, v) VALUES (1, 'a') ON CONFLICT(id) DO UPDATE SET v = excluded.v, w = 'x'"),
      e.DB.prepare("INSERT INTO sim_kind_probe (id, v) VALUES (1, 'b') ON CONFLICT(id) DO UPDATE SET v = excluded.v, w = 'x'"),
      e.DB.prepare("UPDATE sim_kind_probe SET w = 'y' WHERE id = 1"),
      e.DB.prepare("DELETE FROM sim_kind_probe WHERE id = 1"),
    ]);
    const kinds = Object.fromEntries([...d1.byKind!].map(([k, c]) => [k, { statements: c.statements, changes: c.changes, rowsWritten: c.rowsWritten }]));
    expect(kinds["upsert sim_kind_probe (set v…)"]).toEqual({ statements: 2, changes: 2, rowsWritten: 2 });
    expect(kinds["update sim_kind_probe"]).toMatchObject({ statements: 1, changes: 1 });
    expect(kinds["delete sim_kind_probe"]).toMatchObject({ statements: 1, changes: 1 });
    const sum = [...d1.byKind!.values()].reduce((n, c) => n + c.rowsWritten, 0);
    expect(sum).toBe(d1.rowsWritten);
  });

  it("find the R2 buckets among the bindings (not the service bindings) and count Class A and B operations", async () => {
    const m = fresh();
    const { env: e, buckets } = meteredEnv(env, m.d1, m.r2);
    // The agents' bucket is bound here (and the console's own history bucket, where wrangler.jsonc declares one).
    expect(buckets).toContain("BACKUPS");
    // ASSETS is a service binding: it answers any method name over RPC, and must not be taken for a bucket.
    expect(buckets).not.toContain("ASSETS");
    const bucket = (e as unknown as { BACKUPS: R2Bucket }).BACKUPS;
    await bucket.put("sim/probe.txt", "hello");
    expect(await (await bucket.get("sim/probe.txt"))?.text()).toBe("hello");
    await bucket.head("sim/probe.txt");
    expect(m.r2).toEqual({ classA: 1, classB: 2, bytesPut: 5 });
  });
});
