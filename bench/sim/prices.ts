/**
 * Cloudflare list prices (Workers Paid plan, USD) the simulator's monthly costs use: the one place they live.
 * Read on 2026-11-24 through the search tool:
 * - D1: developers.cloudflare.com/d1/platform/pricing/ (as mirrored in the api-evangelist/cloudflare-d1 plans
 *   and finops files, and a project wiki that read Cloudflare's pages on 2026-08-03): rows read 25 billion a month
 *   included then $0.001 per million; rows written 50 million included then $1.00 per million; storage 5 GB
 *   included then $0.75 per GB-month.
 * - Queues: developers.cloudflare.com/queues/platform/pricing/ (api-evangelist/cloudflare-queues mirror): 1 million
 *   operations a month included then $0.40 per million; an operation is a write, read or delete of 64 KB of a
 *   message, so a delivered message costs 3 per 64 KB (more with retries).
 * - R2: cloudflare-docs src/content/docs/r2/pricing.mdx (standard storage): $0.015 per GB-month beyond 10 GB;
 *   Class A $4.50 per million beyond 1 million; Class B $0.36 per million beyond 10 million.
 * Read on 2026-12-06 through the search tool (no network here):
 * - Workers (Standard usage model, Workers Paid): developers.cloudflare.com/workers/platform/pricing/, as the Workflows
 *   pricing page (developers.cloudflare.com/workflows/reference/pricing/) restates it, "identical to Workers Standard":
 *   requests 10 million a month included then $0.30 per million; CPU time 30 million ms a month included then $0.02
 *   per million ms; the plan's minimum charge is $5 a month per account (cloudflare-docs, workers/platform/pricing).
 *   A tail invocation is charged here as a Workers request plus its CPU time, the larger of the two readings
 *   (Cloudflare's Tail Workers page has described them as billed by CPU time; not re-read here).
 * - Durable Objects with SQLite storage (the agent's own outbox rows): developers.cloudflare.com/durable-objects/platform/pricing/,
 *   "SQL storage billing": rows written 50 million a month included then $1.00 per million, rows read 25 billion
 *   included then $0.001 per million, storage 5 GB-month included then $0.20 per GB-month (the page's figures match
 *   D1's for rows; the excerpt read here showed its compute table, the storage figures are from the same page as
 *   mirrored before).
 * Prices change: re-read the pages before quoting a bill.
 */
export const PRICES = {
  readOn: "2026-11-24 (D1, Queues, R2), 2026-12-06 (Workers, Durable Objects)",
  workers: { baseFeePerMonth: 5, requestsPerMillion: 0.3, requestsIncluded: 10_000_000, cpuMsPerMillion: 0.02, cpuMsIncluded: 30_000_000 },
  durableObjects: { rowsWrittenPerMillion: 1.0, rowsWrittenIncluded: 50_000_000, storagePerGbMonth: 0.2, storageIncludedGb: 5 },
  d1: {
    rowsReadPerMillion: 0.001,
    rowsReadIncluded: 25_000_000_000,
    rowsWrittenPerMillion: 1.0,
    rowsWrittenIncluded: 50_000_000,
    storagePerGbMonth: 0.75,
    storageIncludedGb: 5,
  },
  queues: { opsPerMillion: 0.4, opsIncluded: 1_000_000, opBytes: 64 * 1024, opsPerDelivery: 3 },
  r2: { storagePerGbMonth: 0.015, storageIncludedGb: 10, classAPerMillion: 4.5, classAIncluded: 1_000_000, classBPerMillion: 0.36, classBIncluded: 10_000_000 },
} as const;

/**
 * Platform limits the simulator compares its load with. Queues: 5,000 messages per second per queue
 * (developers.cloudflare.com/queues/platform/limits/, as mirrored in api-evangelist/cloudflare-queues, read 2026-11-24;
 * also in /work/shared/TOOLCHAIN.md).
 */
export const LIMITS = { queueMessagesPerSecond: 5_000 } as const;
