/**
 * How the HTTP API answers a failure: `{"error": {"code", "message", "details"?}}` with the status
 * of its code. AxErrors keep their code; the web layer adds its own (unauthorized, forbidden, csrf,
 * rate_limited, too_large). Internal errors say only that something went wrong (the log has it).
 */
import {AxError, type AxErrorCode} from '../core/errors.js';

export type WebErrorCode = AxErrorCode | 'unauthorized' | 'forbidden' | 'csrf' | 'rate_limited' | 'too_large' | 'unsupported_media_type';

export const STATUS: Record<WebErrorCode, number> = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  csrf: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  closed: 503,
  timeout: 504,
};

/** An error the web layer raises itself, answered with `code`'s status. */
export class WebError extends Error {
  constructor(
    readonly code: WebErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'WebError';
  }
}

export interface ErrorBody {
  error: {code: WebErrorCode; message: string; details?: Record<string, unknown>};
}

/** Fastify's own errors (validation, body size, content type, JSON syntax) as the API's codes. */
interface FrameworkError {
  code?: string;
  statusCode?: number;
  validation?: unknown;
  message: string;
}

/** The status and body for anything thrown by a route; `internal` when it is neither an AxError, a WebError nor a client error. */
export function errorResponse(e: unknown): {status: number; body: ErrorBody; internal: boolean} {
  if (e instanceof AxError || e instanceof WebError) {
    const body: ErrorBody = {error: {code: e.code, message: e.message, ...(e.details ? {details: e.details} : {})}};
    return {status: STATUS[e.code], body, internal: e.code === 'internal'};
  }
  const f = e as FrameworkError;
  if (f.validation !== undefined) return client('invalid_input', f.message);
  if (f.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return client('too_large', 'the request body is larger than AX_WEB_BODY_LIMIT');
  if (f.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return client('unsupported_media_type', 'send JSON (Content-Type: application/json)');
  if (f.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return client('invalid_input', 'the JSON body is empty');
  if (f.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (f.statusCode === 400 && f instanceof SyntaxError))
    return client('invalid_input', `the body is not valid JSON: ${f.message}`);
  if (typeof f.statusCode === 'number' && f.statusCode >= 400 && f.statusCode < 500) return client('invalid_input', f.message);
  return {status: 500, body: {error: {code: 'internal', message: 'internal error (see the server log)'}}, internal: true};
}

function client(code: WebErrorCode, message: string): {status: number; body: ErrorBody; internal: boolean} {
  return {status: STATUS[code], body: {error: {code, message}}, internal: false};
}
