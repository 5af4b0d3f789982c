import { deadLetters } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

export { bodyText, bodyType } from "./body-text";

/** A message ingest could not accept, and why. `body` is its text (see body-text.ts). */
export type DeadLetter = { messageId: string; reason: string; eventType: string | null; body: string };

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
