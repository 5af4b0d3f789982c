/**
 * A small Bloom filter, carried in an R2 object's customMetadata so a reader can skip objects that certainly do
 * not hold an agent or an id without fetching them. False positives cost one GET; false negatives cannot happen.
 */

/** Hash probes per item: ~1% false positives at 10 bits per item. */
const PROBES = 7;
/** Bits per item asked for, before rounding to a power of two. */
const BITS_PER_ITEM = 10;
export const MIN_BLOOM_BITS = 256;
/** 2 KB of bits, 2,732 base64 characters: well inside R2's 8 KB of metadata per object. */
export const MAX_BLOOM_BITS = 16_384;

/** FNV-1a (32 bits) over UTF-16 code units, with a seed: stable across isolates and releases. */
export function fnv1a(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function probes(item: string, bits: number): number[] {
  // Double hashing (h1 + i·h2): two independent hashes give all the probes.
  const h1 = fnv1a(item);
  const h2 = fnv1a(item, 0x9747b28c) | 1;
  return Array.from({ length: PROBES }, (_, i) => ((h1 + Math.imul(i, h2)) >>> 0) & (bits - 1));
}

/** A filter sized for these items (a power of two between MIN_BLOOM_BITS and MAX_BLOOM_BITS), as base64. */
export function bloomOf(items: Iterable<string>): string {
  const list = [...new Set(items)];
  let bits = MIN_BLOOM_BITS;
  while (bits < list.length * BITS_PER_ITEM && bits < MAX_BLOOM_BITS) bits *= 2;
  const bytes = new Uint8Array(bits / 8);
  for (const item of list) for (const p of probes(item, bits)) bytes[p >> 3]! |= 1 << (p & 7);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** Whether the filter may hold the item. A filter that does not decode says yes: the reader then fetches the object. */
export function bloomMayHold(filter: string, item: string): boolean {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(filter), (c) => c.charCodeAt(0));
  } catch {
    return true;
  }
  const bits = bytes.length * 8;
  if (bits < MIN_BLOOM_BITS || (bits & (bits - 1)) !== 0) return true;
  return probes(item, bits).every((p) => (bytes[p >> 3]! & (1 << (p & 7))) !== 0);
}
