/**
 * Hash routes (`#/tasks?type=x`): the server serves one page and needs no fallback. A route is a
 * path and its query; `cell` in the query selects the cell and is carried over by every link.
 */
import {useEffect, useState} from 'react';

export interface Route {
  path: string;
  params: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  return {path: path.startsWith('/') ? path : `/${path}`, params: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1))};
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const on = (): void => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export type Params = Record<string, string | number | null | undefined>;

/** `#<path>?<params>`, empty values left out, the cell of `from` kept unless params set it. */
export function hrefOf(path: string, params: Params = {}, from?: Route): string {
  const qs = new URLSearchParams();
  const cell = from?.params.get('cell');
  if (cell && !('cell' in params)) qs.set('cell', cell);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return `#${path}${s ? `?${s}` : ''}`;
}

export function navigate(href: string): void {
  if (window.location.hash !== href) window.location.hash = href;
}
