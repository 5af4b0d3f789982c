import { utf8Length } from "@agent-oncall/telemetry";
import { binaryReason, bodyText, isBinary } from "./body-text";
import type { DeadLetter } from "./dead-letters";

/**
 * Splits a Queue message into the events it carries. Agents send JSON text
 * (a packed array of events, cheaper on the agent's thread); other producers
 * may send one event, or structured bodies, accepted when they hold JSON data.
 * Bytes are never guessed at: they are refused and kept as base64.
 */

/** One event of a message, to be judged on its own. */
export type MessageItem = {
  /** The dead-letter key: the message id, `#index` for an item of a packed array. */
  messageId: string;
  item: unknown;
  /** The whole message is text within the event size limit, so this item is too. */
  fitsInMessage: boolean;
  /** What a dead letter keeps of it: the text it was sent as when it had its own, else its serialisation. */
  deadBody: () => string;
};

/** The items of one message, or the dead letter of a message that holds none ingest can read. */
export function messageItems(m: { id: string; body: unknown }, maxEventBytes: number): { items: MessageItem[]; dead: DeadLetter | null } {
  const refused = (reason: string) => ({ items: [], dead: { messageId: m.id, reason, eventType: null, body: bodyText(m.body) } });
  if (isBinary(m.body)) return refused(binaryReason(m.body));
  const text = typeof m.body === "string" ? m.body : undefined;
  let value: unknown = m.body;
  if (text !== undefined) {
    try {
      value = JSON.parse(text);
    } catch {
      return refused("invalid event: body is text but not JSON");
    }
  }
  if (Array.isArray(value) && !value.length) return refused("invalid event: a packed message with no events");
  const fitsInMessage = text !== undefined && utf8Length(text) <= maxEventBytes;
  if (!Array.isArray(value)) return { items: [{ messageId: m.id, item: value, fitsInMessage, deadBody: () => bodyText(text ?? value) }], dead: null };
  // An item too deep to serialise is kept as the whole message it came in.
  const items = value.map((item, i) => ({ messageId: `${m.id}#${i}`, item, fitsInMessage, deadBody: () => bodyText(item, text) }));
  return { items, dead: null };
}
