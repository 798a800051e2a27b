// Linux /proc, read by the benchmarks (CPU and memory of the dev server) and the e2e tests (which
// processes the service left behind).
import { readdirSync, readFileSync } from "node:fs";

/** A /proc file's text, or undefined when it is gone (the process exited) or unreadable. */
export function readProcFile(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Every process in /proc: its pid and the fields of its stat line after "pid (comm)" (state is [0], ppid [1], pgrp [2], utime [11], stime [12]). */
export function procStats(): Array<{ pid: number; fields: string[] }> {
  const stats: Array<{ pid: number; fields: string[] }> = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcFile(`/proc/${entry}/stat`);
    if (stat) stats.push({ pid: Number(entry), fields: stat.slice(stat.lastIndexOf(")") + 2).split(" ") });
  }
  return stats;
}

// Memory: VmRSS of every process in a server's process group.

export function groupPids(group: number): number[] {
  return procStats()
    .filter(({ fields }) => Number(fields[2]) === group)
    .map(({ pid }) => pid);
}

export const processName = (pid: number) => readProcFile(`/proc/${pid}/comm`)?.trim() ?? "?";
export const rssKb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readProcFile(`/proc/${pid}/status`) ?? "")?.[1] ?? 0);

/** Samples the summed RSS of the workerd processes of `group` every 10 ms; `stop()` gives idle and peak (KiB). */
export function rssSampler(group: number) {
  const pids = groupPids(group).filter((pid) => processName(pid).startsWith("workerd"));
  const total = () => pids.reduce((sum, pid) => sum + rssKb(pid), 0);
  const idle = total();
  let peak = idle;
  const timer = setInterval(() => {
    peak = Math.max(peak, total());
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, total());
      return { idleKb: idle, peakKb: peak };
    },
  };
}
