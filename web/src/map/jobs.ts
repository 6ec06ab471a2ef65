// Jobs the service runs for the map (exports, volumes, contours): started with a POST that answers a job id, polled
// with /api/workers/check until ready, fetched from /api/workers/get.
import { api } from '../api.ts';

/** Where the finished job's file downloads from, and its file name. */
export interface JobDone {
  url: string;
  filename: string;
}

export type Started = { url: string; filename: string } | { celery_task_id: string; filename: string };
type JobState = { ready: boolean; error?: string };

/** Polls a started job to the end; a failed job throws its error. */
export async function waitForJob(started: Started, signal: AbortSignal, pollMs = 1000): Promise<JobDone> {
  if ('url' in started) return started;
  const id = encodeURIComponent(started.celery_task_id);
  for (;;) {
    const state = await api<JobState>(`/api/workers/check/${id}`, { signal });
    if (state.ready && state.error) throw new Error(state.error);
    if (state.ready) return { url: `/api/workers/get/${id}?filename=${encodeURIComponent(started.filename)}`, filename: started.filename };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, pollMs);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
    });
  }
}

/** Starts a job whose result is JSON (a volume, predictions) with a POST to `path`, and answers that result. */
export async function jsonJob<T>(path: string, body: unknown, signal: AbortSignal): Promise<T> {
  const started = await api<Started>(path, { method: 'POST', body, signal });
  const done = await waitForJob(started, signal, 500);
  return api<T>(done.url, { signal });
}
