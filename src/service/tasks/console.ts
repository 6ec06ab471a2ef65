// A task's console: the node's output lines, appended as the scheduler receives them, read by `output/`.
import { appendFile, readFile, rm } from 'node:fs/promises';

export async function appendConsole(file: string, lines: string[]): Promise<void> {
  if (lines.length) await appendFile(file, `${lines.join('\n')}\n`);
}

export async function resetConsole(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** The lines from `line` on, joined by newlines ("" when there are none yet, as WebODM answers). */
export async function readConsole(file: string, line: number): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return '';
  }
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return lines.slice(Math.max(0, line)).join('\n');
}
