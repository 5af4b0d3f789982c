import type { AdminErrorCode } from "../../src/admin-rpc/contract";

/**
 * HTTP status for a typed admin error, for actions and reads alike. Never a 5xx: the console did its part.
 * An agent that has no admin mixin cannot process the request (422); one that is being evicted, failing or
 * too slow to answer is a failed dependency (424). The body says which, in words.
 */
export const ADMIN_ERROR_STATUS: Record<AdminErrorCode, 400 | 403 | 404 | 409 | 422 | 424> = {
  invalid_input: 400,
  not_permitted: 403,
  not_found: 404,
  agent_terminated: 409,
  unsupported: 422,
  unavailable: 424,
  timeout: 424,
};
