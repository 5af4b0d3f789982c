/** Public surface of the admin RPC: the DO-side mixin and the Worker-side audited client. */
export { withAdminRpc } from "./mixin";
export { createAdminClient, type AdminClient, type Actor, type Target } from "./client";
export * from "./contract";
