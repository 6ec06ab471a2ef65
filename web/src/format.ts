// How the application words the API's codes and numbers.
import type { Task } from './api.ts';

export const STATUS = { QUEUED: 10, RUNNING: 20, FAILED: 30, COMPLETED: 40, CANCELED: 50 } as const;
const STATUS_NAMES: Record<number, string> = { 10: 'Queued', 20: 'Running', 30: 'Failed', 40: 'Completed', 50: 'Canceled' };
const ACTION_NAMES: Record<number, string> = { 1: 'Canceling', 2: 'Removing', 3: 'Restarting', 4: 'Resizing', 5: 'Importing' };

export function statusText(task: Task): string {
  if (task.pending_action !== null) return `${ACTION_NAMES[task.pending_action] ?? 'Working'}…`;
  if (task.partial) return 'Waiting for images';
  if (task.status === null) return 'Waiting for a node';
  return STATUS_NAMES[task.status] ?? `Status ${task.status}`;
}

export function statusClass(task: Task): string {
  switch (task.status) {
    case STATUS.RUNNING:
      return 'running';
    case STATUS.COMPLETED:
      return 'completed';
    case STATUS.FAILED:
      return 'failed';
    case STATUS.CANCELED:
      return 'canceled';
    default:
      return '';
  }
}

/** Whether the task can still change by itself (and so is worth polling). */
export function isActive(task: Task): boolean {
  return task.pending_action !== null || task.status === null || task.status === STATUS.QUEUED || task.status === STATUS.RUNNING;
}

export function duration(ms: number): string {
  if (!(ms >= 0)) return '–';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return h ? `${h} h ${m} min` : m ? `${m} min ${rest} s` : `${rest} s`;
}

export function bytes(n: number): string {
  if (!(n >= 0)) return '–';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value >= 100 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export const percent = (fraction: number) => `${Math.round(Math.max(0, Math.min(1, fraction)) * 100)} %`;
