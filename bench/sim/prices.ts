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
 * Prices change: re-read the pages before quoting a bill.
 */
export const PRICES = {
  readOn: "2026-11-24",
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
