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

/** What a lookup by id alone was for, as findOwned names it. */
export type OwnedKind = "run" | "incident" | "session";

/**
 * A lookup by id alone found the id reported by several agents: the caller must name one (a 400). The refusal
 * carries the facts; the console phrases them and links each agent's page (console/words.ts).
 */
export class AmbiguousOwner extends Error {
  override readonly name = "AmbiguousOwner";
  readonly status = 400;
  readonly code = "ambiguous_owner";
  constructor(
    /** what was looked up */
    readonly what: OwnedKind,
    /** the id several agents reported */
    readonly id: string,
    /** the agents that reported it, by class and name, at most a page of them */
    readonly candidates: { agentClass: string; agentName: string }[],
    /** true when more agents reported it than `candidates` lists */
    readonly more: boolean,
  ) {
    super(`ambiguous_owner: ${what} ${id}`);
  }
}

/** True for an AmbiguousOwner, also across module copies (checks the name, not the prototype). */
export function isAmbiguousOwner(e: unknown): e is AmbiguousOwner {
  return e instanceof AmbiguousOwner || (e instanceof Error && e.name === "AmbiguousOwner");
}
