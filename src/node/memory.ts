// The memory an engine run holds: the resident sets of every process in its process group (the engine runs in a
// group of its own, and its workers stay in it), read from /proc.
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

const gone = (): string => '';

/** Bytes resident in the processes of group `pgid`, now. Processes that end while they are read count nothing. */
export async function groupResidentBytes(pgid: number): Promise<number> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  let total = 0;
  await Promise.all(pids.map(async (pid) => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(gone);
    if (!stat || processGroupOf(stat) !== pgid) return;
    total += residentBytesOf(await readFile(`/proc/${pid}/status`, 'utf8').catch(gone));
  }));
  return total;
}
