// The memory an engine run holds: the proportional set sizes of every process in its process group (the engine runs
// in a group of its own, and its workers stay in it), read from /proc. A page shared by n processes counts 1/n, so
// the engine's forked workers, which share their parent's pages, are not counted twice as resident sets would be.
import { readFile, readdir } from 'node:fs/promises';

/** The process group of a /proc/<pid>/stat line: the fifth field, counted after the command name in parentheses,
 * which may itself hold spaces and parentheses. */
export function processGroupOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** Resident memory in bytes from /proc/<pid>/status (its VmRSS line, in kB); 0 for a process without one. */
export function residentBytesOf(status: string): number {
  const kilobytes = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kilobytes === undefined ? 0 : Number(kilobytes) * 1024;
}

/** Proportional set size in bytes from /proc/<pid>/smaps_rollup (its Pss line, in kB); null without one. */
export function proportionalBytesOf(rollup: string): number | null {
  const kilobytes = /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1];
  return kilobytes === undefined ? null : Number(kilobytes) * 1024;
}

const gone = (): string => '';

/** A process's share of memory; its resident set where the kernel gives no proportional figure (before 4.14). */
async function heldBytesOf(pid: string): Promise<number> {
  const proportional = proportionalBytesOf(await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(gone));
  return proportional ?? residentBytesOf(await readFile(`/proc/${pid}/status`, 'utf8').catch(gone));
}

/** Bytes held by the processes of group `pgid`, now. Processes that end while they are read count nothing. */
export async function groupHeldBytes(pgid: number): Promise<number> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const held = await Promise.all(pids.map(async (pid) => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(gone);
    return stat && processGroupOf(stat) === pgid ? heldBytesOf(pid) : 0;
  }));
  return held.reduce((sum, bytes) => sum + bytes, 0);
}
