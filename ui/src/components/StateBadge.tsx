/** A task state (or any status word) in its colour. */
export function StateBadge({state}: {state: string}) {
  return <span className={`badge s-${state.replace(/[^a-z0-9_-]/gi, '')}`}>{state}</span>;
}
