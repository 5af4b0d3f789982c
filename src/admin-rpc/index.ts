/**
 * The agent side of the admin RPC: the mixin and the contract. The Worker-side
 * client is a separate entry (`@agent-oncall/admin-rpc/client`) that an agent never loads.
 */

export * from "./contract.js";
export { type WithAdminRpcClass, type WithAdminRpcOptions, withAdminRpc } from "./mixin.js";
export { publishEvent } from "./publish.js";
export * from "./recovery-budget.js";
export * from "./residency-contract.js";
