/** `await using` for the runtime's resources (store, broker, outbox) until they dispose themselves. */

/**
 * Returns `resource` with `Symbol.asyncDispose` calling its `close()` (kept if it already has one).
 * A close that fails during disposal is thrown by the `await using` block, after the other
 * resources were disposed (as SuppressedError when the block itself threw).
 */
export function disposable<T extends {close(): Promise<unknown>}>(resource: T): T & AsyncDisposable {
  const r = resource as T & Partial<AsyncDisposable>;
  if (typeof r[Symbol.asyncDispose] === 'function') return r as T & AsyncDisposable;
  return Object.assign(resource, {
    [Symbol.asyncDispose]: async (): Promise<void> => {
      await resource.close();
    },
  });
}
