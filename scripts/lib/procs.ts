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

/** Resident memory (VmRSS, KiB) of a process, 0 when it is gone. */
export function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readProcFile(`/proc/${pid}/status`) ?? "")?.[1] ?? 0);
}
