// Work on a list with at most `limit` tasks in flight: a new one starts as soon as one ends (a slow
// task holds one slot, not a whole group of them, as Promise.all over slices would).

/** Runs `task` on every item, at most `limit` at a time; resolves when all are done (a task must not throw). */
export async function eachInPool<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
