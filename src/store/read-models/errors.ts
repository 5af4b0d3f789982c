/**
 * Errors the read models throw on purpose. A route maps BadRequest to a 400
 * with its message as is: the message is written for the person who typed
 * the URL, never a stack trace.
 */

/** The caller asked for something malformed (a bad cursor, an unknown filter value, a limit out of range). */
export class BadRequest extends Error {
  override readonly name = "BadRequest";
  readonly status = 400;
  constructor(message: string) {
    super(message);
  }
}

/** True for a BadRequest, also across module copies (checks the name, not the prototype). */
export function isBadRequest(e: unknown): e is BadRequest {
  return e instanceof BadRequest || (e instanceof Error && e.name === "BadRequest");
}
