import { deadLetters } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

/** A message ingest could not accept, and why. */
export type DeadLetter = { messageId: string; reason: string; eventType: string | null; body: string };

/** Bodies are kept whole up to this size; D1 rows may be 2 MB, Queue messages are at most 128 KB anyway. */
const MAX_BODY = 256_000;

/** Best-effort text of a message body for the dead-letter table. */
export function bodyText(body: unknown): string {
  let s: string;
  if (typeof body === "string") s = body;
  else {
    try {
      s = JSON.stringify(body) ?? String(body);
    } catch {
      s = String(body);
    }
  }
  return s.length > MAX_BODY ? `${s.slice(0, MAX_BODY)}… [truncated]` : s;
}

/** The `type` field of a body, if it has one, so dead letters can be grouped. */
export function bodyType(body: unknown): string | null {
  const t = body && typeof body === "object" ? (body as { type?: unknown }).type : undefined;
  return typeof t === "string" ? t.slice(0, 200) : null;
}

const D = names(deadLetters);
/** Each letter is JSON keyed like the schema (a DeadLetter plus receivedAt), so the column keys double as JSON keys. */
const KEYS = ["messageId", "receivedAt", "reason", "eventType", "body"] as const satisfies readonly (keyof DeadLetter | "receivedAt")[];
const SQL = `INSERT INTO ${D.$table} (${KEYS.map((k) => D[k]).join(", ")})
SELECT ${KEYS.map((k) => `j ->> '$.${k}'`).join(", ")}
FROM (SELECT value AS j FROM json_each(?1)) WHERE true ON CONFLICT(${D.messageId}) DO NOTHING`;

/** One statement per dead letter keeps each JSON parameter small even for large bodies. */
export function deadLetterStatements(db: D1Database, letters: DeadLetter[], receivedAt: number): D1PreparedStatement[] {
  return letters.map((l) => db.prepare(SQL).bind(JSON.stringify([{ ...l, receivedAt }])));
}
