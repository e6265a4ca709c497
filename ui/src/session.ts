/** What every page reads from the app: the session, the API client for the chosen cell, the route. */
import {createContext, useContext} from 'react';
import type {Api} from './api';
import type {Route} from './router';
import type {Session} from './types';

export interface AppContext {
  session: Session;
  api: Api;
  route: Route;
  /** The cell addressed (`?cell=`, else the server's default). */
  cell: string;
  /** Actions are shown to operators only. */
  operator: boolean;
  /** Reads the session again (after a 401, a sign-out). */
  refreshSession: () => void;
}

export const AppCtx = createContext<AppContext | null>(null);

export function useApp(): AppContext {
  const c = useContext(AppCtx);
  if (c === null) throw new Error('useApp outside the signed-in app');
  return c;
}
