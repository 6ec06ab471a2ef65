// The API client of the web application: every call goes through the public API. Signing in (POST
// /api/session/) leaves the token in an HttpOnly cookie that the browser sends to the API by itself, so no script
// of a page can read it; the app keeps only who is signed in and until when, so that a reload stays signed in.
import { signal } from '@preact/signals';

const SESSION_KEY = 'aeromap.session';

/** Who is signed in, as POST /api/session/ answered. */
export interface Session {
  user_id: number;
  username: string;
  /** When the session ends, in seconds since 1970. */
  exp: number;
}

/**
 * The site's storage, or null where the browser refuses it: a page framed by another site (a public task's iframe
 * page) with third-party storage blocked. Such a page keeps no session, and needs none.
 */
const storage: Storage | null = (() => {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
})();

// Earlier versions kept the token itself where scripts can read it.
storage?.removeItem('aeromap.token');

/** The signed-in user; null when signed out (the app then shows the sign-in page). */
export const session = signal<Session | null>(current(storage?.getItem(SESSION_KEY) ?? null));

/** A session whose end has passed is dropped at once: the sign-in page, not a page of failed requests. */
function current(stored: string | null): Session | null {
  try {
    const value = JSON.parse(stored ?? 'null') as Session | null;
    return value && typeof value.exp === 'number' && value.exp * 1000 > Date.now() ? value : null;
  } catch {
    return null;
  }
}

export function signIn(value: Session): void {
  storage?.setItem(SESSION_KEY, JSON.stringify(value));
  session.value = value;
}

export function signOut(): void {
  storage?.removeItem(SESSION_KEY);
  session.value = null;
  void fetch('/api/session/', { method: 'DELETE' }).catch(() => undefined);
}

/** An error reply of the API, with the message a person can act on. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(describeError(status, body));
  }
}

/** {"detail": "..."} or field errors {"field": ["message"]}, as one line. */
export function describeError(status: number, body: unknown): string {
  if (body && typeof body === 'object') {
    const entries = Object.entries(body as Record<string, unknown>);
    const detail = (body as { detail?: unknown }).detail;
    if (typeof detail === 'string') return detail;
    if (entries.length) {
      return entries
        .map(([field, value]) => `${field === 'non_field_errors' ? '' : `${field}: `}${Array.isArray(value) ? value.join(' ') : String(value)}`)
        .join('; ');
    }
  }
  return `The server answered ${status}`;
}

// The API answers 403 with these details when the token itself fails (WebODM's clients sign in again on them).
const TOKEN_FAILURES = /^(Signature has expired|Invalid signature|Error decoding signature|Invalid payload|User account is disabled|Authentication credentials were not provided)/;

/** Calls the API; JSON in and out (FormData and URLSearchParams bodies go as they are). */
export async function api<T = unknown>(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  let body: BodyInit | undefined;
  if (init.body instanceof FormData || init.body instanceof URLSearchParams) body = init.body;
  else if (init.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(init.body);
  }
  const response = await fetch(path, { method: init.method ?? 'GET', headers, body, signal: init.signal });
  const text = await response.text();
  // The console comes as plain text; everything else as JSON.
  const json = /json/.test(response.headers.get('content-type') ?? '');
  const parsed: unknown = !text ? null : json || !response.ok ? safeJson(text) : text;
  if (!response.ok) {
    const detail = (parsed as { detail?: unknown } | null)?.detail;
    if ((response.status === 401 || response.status === 403) && typeof detail === 'string' && TOKEN_FAILURES.test(detail)) signOut();
    throw new ApiError(response.status, parsed);
  }
  return parsed as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

/** Every page of a paginated list (WebODM's {count, next, results}) or a plain list. */
export async function listAll<T>(path: string): Promise<T[]> {
  const first = await api<T[] | { results: T[]; next: string | null }>(path);
  if (Array.isArray(first)) return first;
  const items = [...first.results];
  let next = first.next;
  while (next) {
    const page: { results: T[]; next: string | null } = await api(new URL(next, location.href).pathname + new URL(next, location.href).search);
    items.push(...page.results);
    next = page.next;
  }
  return items;
}

/** The task as the API shows it. */
export interface Task {
  id: number;
  project: number;
  processing_node: number | null;
  processing_node_name: string | null;
  images_count: number;
  can_rerun_from: string[];
  available_assets: string[];
  uuid: string;
  name: string;
  processing_time: number;
  auto_processing_node: boolean;
  status: number | null;
  last_error: string | null;
  options: { name: string; value: unknown }[];
  created_at: string;
  pending_action: number | null;
  upload_progress: number;
  resize_progress: number;
  running_progress: number;
  partial: boolean;
  extent: number[] | null;
  statistics: Record<string, unknown>;
  size: number;
  /** Anyone with the link sees the task (its map, 3D view and downloads), signed in or not. */
  public: boolean;
  /** With public: anyone may also save its 3D scene. */
  public_edit: boolean;
  /** The saved 3D scene (WebODM's Potree scene); its view is where the 3D view opens. */
  potree_scene: Record<string, unknown>;
  tags: string[];
  resize_to: number;
  epsg: number | null;
  wkt: string | null;
  crop: { type: 'Polygon'; coordinates: number[][][] } | null;
  compacted: boolean;
}

export interface Project {
  id: number;
  tasks: number[];
  created_at: string;
  name: string;
  description: string;
  permissions: string[];
  tags: string[];
  owner?: number;
  [key: string]: unknown;
}

export const taskPath = (projectId: number, taskId: number) => `/api/projects/${projectId}/tasks/${taskId}`;

/** The addresses of a public task's pages (WebODM's): its map or 3D view, alone or to embed in another site. */
export const publicPagePath = (taskId: number, view: 'map' | '3d', embedded = false) => `/public/task/${taskId}/${embedded ? 'iframe/' : ''}${view}/`;
