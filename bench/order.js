// The order of the variants in each round of `npm run bench`.
//
// A run pays for what the run before it left to the runtime (containerd
// removes snapshots and reaps shims after the reset, some of it only when
// the next run starts mutating). Rotating one fixed order keeps every
// variant behind the same predecessor in every round (klet runonce always
// after the kubelet, say), which turns that carry-over into a bias of one
// variant. The rows of a Williams design put every variant behind every
// other one equally often and in every position equally often: over n
// rounds for an even number of variants n, over 2n for an odd n. (Within
// rounds: the last run of one round and the first of the next add one more
// pair per round, which the design does not balance.)

/** The variant indices (0 … n-1) in the order of round `r` (0-based, cycling through the design's rows). */
export function williamsRow(n, r) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`williamsRow: n must be a positive integer, got ${n}`);
  // First row: 0, 1, n-1, 2, n-2, 3, …; row k adds k (mod n) to every entry.
  const first = [];
  for (let j = 0, lo = 1, hi = n - 1; j < n; j++) {
    if (j === 0) first.push(0);
    else if (j % 2 === 1) first.push(lo++);
    else first.push(hi--);
  }
  const rows = n % 2 === 0 ? n : 2 * n;
  const k = ((r % rows) + rows) % rows;
  const row = first.map((v) => (v + (k % n)) % n);
  // Odd n: the second n rows are the first n reversed.
  return k >= n ? row.reverse() : row;
}
