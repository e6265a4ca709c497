/**
 * `await using x = disposable(await open…())`: the resource is closed when the block ends, however
 * it ends. Errors while closing are dropped (the command's own result or error is what matters).
 */
export function disposable<T extends {close(): Promise<unknown>}>(resource: T): T & AsyncDisposable {
  return Object.assign(resource, {[Symbol.asyncDispose]: () => resource.close().then(noop, noop)});
}

const noop = (): void => undefined;
