/** Subscribing many listeners of one event stream at once, with one function that removes them all. */
import type {AxEventName, AxEvents, AxListener} from '../events.js';

export type Listeners = {[K in AxEventName]?: AxListener<K>};

/** Adds each listener to `events`; returns the function that removes them (metrics off again). */
export function subscribe(events: AxEvents, listeners: Listeners): () => void {
  const offs = (Object.entries(listeners) as Array<[AxEventName, AxListener<AxEventName>]>).map(([name, fn]) => events.on(name, fn));
  return () => {
    for (const off of offs) off();
  };
}

/** Milliseconds to seconds (Prometheus base unit). */
export const seconds = (ms: number): number => ms / 1000;
