/**
 * The console's HTTP client for /api/v1. Every request is same-origin with the session cookie;
 * every state-changing one carries the session's CSRF token. A non-2xx answer becomes an ApiError
 * holding the server's code and message (shown as text, never as markup); a network failure is
 * an ApiError with code "unavailable". A 401 on anything but the session itself tells the app the
 * session is gone (onUnauthorized), then throws as usual.
 */
import type {ApiErrorBody} from './types';

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: string, message: string, status: number, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface Api {
  get<T>(path: string, query?: Query): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, query?: Query): Promise<T>;
}

export interface ApiOptions {
  /** The cell to address (`?cell=`); undefined: the server's default. */
  cell?: string | undefined;
  csrf: string | null;
  onUnauthorized?: () => void;
}

/** Relative to the page, so the console works wherever the server mounts it. */
const BASE = 'api/v1';

export function url(path: string, query: Query = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return `${BASE}${path}${s ? `?${s}` : ''}`;
}

function isErrorBody(x: unknown): x is ApiErrorBody {
  if (typeof x !== 'object' || x === null || !('error' in x)) return false;
  const e = (x as {error: unknown}).error;
  return typeof e === 'object' && e !== null && typeof (e as {message?: unknown}).message === 'string';
}

async function call<T>(method: string, path: string, query: Query, body: unknown, o: ApiOptions): Promise<T> {
  const headers: Record<string, string> = {Accept: 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && o.csrf) headers['X-CSRF-Token'] = o.csrf;
  let res: Response;
  try {
    res = await fetch(url(path, o.cell ? {...query, cell: o.cell} : query), {
      method,
      headers,
      credentials: 'same-origin',
      cache: 'no-store',
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch {
    throw new ApiError('unavailable', 'The server did not answer (is `ax web` running?)', 0);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    if (res.status === 401 && path !== '/session') o.onUnauthorized?.();
    if (isErrorBody(json)) throw new ApiError(json.error.code, json.error.message, res.status, json.error.details);
    throw new ApiError('internal', `HTTP ${res.status} ${res.statusText}`.trim(), res.status);
  }
  return json as T;
}

export function makeApi(o: ApiOptions): Api {
  return {
    get: (path, query = {}) => call('GET', path, query, undefined, o),
    send: (method, path, body, query = {}) => call(method, path, query, body, o),
  };
}

/** The message to show for anything thrown. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
