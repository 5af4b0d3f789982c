import { env } from "cloudflare:workers";
import { getTableColumns } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import * as schema from "../../src/store/schema";
import { withoutRowid } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

// schema.ts's withoutRowid is carried out by a migration written by hand (drizzle cannot say WITHOUT ROWID): the
// migrated database must match it, table for table and column for column.

const tableSql = async (table: string) =>
  (await env.DB.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").bind(table).first<{ sql: string }>())?.sql ?? "";

describe("tables stored without rowid", () => {
  it("are exactly the ones schema.ts lists", async () => {
    const listed = new Set(withoutRowid.map((t) => names(t).$table));
    const all = (await env.DB.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL").all<{ name: string; sql: string }>())
      .results;
    const stored = all.filter((t) => /\)\s*WITHOUT ROWID\s*$/i.test(t.sql)).map((t) => t.name);
    expect(new Set(stored)).toEqual(listed);
  });

  it("keep every column the schema gives them, after the hand-written rebuild", async () => {
    for (const t of withoutRowid) {
      const cols = (await env.DB.prepare(`SELECT name FROM pragma_table_info('${names(t).$table}')`).all<{ name: string }>()).results.map((c) => c.name);
      expect(new Set(cols), names(t).$table).toEqual(new Set(Object.values(getTableColumns(t)).map((c) => c.name)));
    }
  });

  it("write one row less per new row than a rowid table with the same key and indexes", async () => {
    // The same table shape as runs, once as a rowid table: what a new run cost before.
    const runsSql = await tableSql(names(schema.runs).$table);
    expect(runsSql).toMatch(/WITHOUT ROWID/);
    await env.DB.exec(
      `${runsSql
        .replace(/^CREATE TABLE "?`?runs`?"?/, "CREATE TABLE runs_rowid_copy")
        .replace(/\s*WITHOUT ROWID\s*$/, "")
        .replace(/\n/g, " ")}`,
    );
    const indexes = (
      await env.DB.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql IS NOT NULL").all<{ sql: string }>()
    ).results;
    expect(indexes.length).toBeGreaterThan(0);
    for (const { sql } of indexes) await env.DB.exec(sql.replace(/INDEX `([a-z_]+)` ON `runs`/, "INDEX `copy_$1` ON runs_rowid_copy").replace(/\n/g, " "));
    const insert = (table: string) =>
      env.DB.prepare(
        `INSERT INTO ${table} (fiber_id, agent_class, agent_name, name, first_seen, last_seen, outcome) VALUES ('f1', 'A', 'a', 'job', 1, 2, 'completed')`,
      ).run();
    const withKeyIndex = await insert("runs_rowid_copy");
    const without = await insert(names(schema.runs).$table);
    expect(withKeyIndex.meta.rows_written - without.meta.rows_written).toBe(1);
  });
});
