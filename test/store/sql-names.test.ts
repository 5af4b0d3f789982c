import { env } from "cloudflare:workers";
import { isTable, type Table } from "drizzle-orm";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as schema from "../../src/store/schema";
import { names, selectList } from "../../src/store/sql-names";

/** Every table the schema declares (new tables are covered without editing this test). */
const TABLES: Table[] = Object.values(schema).filter((t) => isTable(t));

describe("sql-names", () => {
  it("maps each schema key to its SQL column name, and $table to the table name", () => {
    expect(names(schema.agents)).toEqual({
      $table: "agents",
      agentClass: "agent_class",
      agentName: "agent_name",
      firstSeen: "first_seen",
      lastSeen: "last_seen",
      seqMax: "seq_max",
      seqSeen: "seq_seen",
      listedAt: "listed_at",
      alarmFirstAt: "alarm_first_at",
      alarmLastAt: "alarm_last_at",
    });
    expect(names(schema.deadLetters)).toEqual({
      $table: "dead_letters",
      messageId: "message_id",
      receivedAt: "received_at",
      reason: "reason",
      eventType: "event_type",
      body: "body",
    });
    const s = names(schema.sessions);
    expect([s.$table, s.sessionName, s.lastEventEventId, s.recoveryCount, s.status]).toEqual([
      "sessions",
      "session_name",
      "last_event_event_id",
      "recovery_count",
      "status",
    ]);
    const b = names(schema.workspaceBackups);
    expect([b.$table, b.expiresAt, b.handle]).toEqual(["workspace_backups", "expires_at", "handle"]);
    expect(names(schema.eventRollups).$table).toBe("event_rollups");
  });

  it("names exactly the tables and columns of the migrated D1 database", async () => {
    expect(TABLES.length).toBe(22);
    for (const t of TABLES) {
      const { $table, ...cols } = names(t);
      const info = await env.DB.prepare(`PRAGMA table_info(${$table})`).all<{ name: string }>();
      expect(info.results.map((c) => c.name).sort(), $table).toEqual(Object.values(cols).sort());
    }
  });

  it("selectList returns rows keyed like the schema, aliasing only where the names differ", async () => {
    expect(selectList(schema.runs, ["fiberId", "name", "lastSeen"])).toBe("fiber_id AS fiberId, name, last_seen AS lastSeen");
    const keys = ["sessionName", "status", "lastEventAt", "recoveryCount"] as const;
    const [columns] = await env.DB.prepare(`SELECT ${selectList(schema.sessions, keys)} FROM ${names(schema.sessions).$table} LIMIT 0`).raw({
      columnNames: true,
    });
    expect(columns).toEqual([...keys]);
  });

  it("types names as literals and rejects keys the schema does not have", () => {
    expectTypeOf(names(schema.incidents).maxAttempts).toEqualTypeOf<"max_attempts">();
    expectTypeOf(names(schema.eventSegments).$table).toEqualTypeOf<"event_segments">();
    // @ts-expect-error: a SQL name is not a schema key.
    expect(names(schema.agents).agent_class).toBeUndefined();
    // @ts-expect-error: a key of another table.
    expect(() => selectList(schema.agents, ["fiberId"])).toThrow();
  });
});
