import {absolute, relative} from '../format';

/** A time as "12 s ago" with the absolute time in its title; "—" for none. */
export function Time({at}: {at: string | null | undefined}) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={at} title={absolute(at)}>
      {relative(at, Date.now())}
    </time>
  );
}

/** A table cell holding a Time, kept on one line. */
export function TimeCell({at}: {at: string | null | undefined}) {
  return (
    <td className="nowrap">
      <Time at={at} />
    </td>
  );
}

/** The row a table shows when it has none: `children` across `colSpan` columns. */
export function EmptyRow({colSpan, children}: {colSpan: number; children: string}) {
  return (
    <tr>
      <td colSpan={colSpan} className="muted">
        {children}
      </td>
    </tr>
  );
}
