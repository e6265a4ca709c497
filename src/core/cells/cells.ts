/**
 * Cells: isolation units, each with its own queues and optionally its own MySQL database or server
 * and RabbitMQ vhost. Pure: the configuration's `cells` setting (AX_CELLS), validated once, and the
 * routing policy over it — which cell a task type belongs to, the configuration one cell runs with,
 * the cells a `--cell` flag names, and which outbox rows a cell's relay takes.
 *
 * A cell without a mysqlUrl or amqpUrl shares AX_MYSQL_URL / AX_AMQP_URL with the default cell and
 * is kept apart there by the rows' `cell` column and its queue names. A type no pattern names
 * belongs to the default cell (AX_CELL).
 */
import {invalid} from '../errors.js';
import {parseMysqlUrl} from '../config/mysql-url.js';
import {parseAmqpUrls} from '../config/amqp-urls.js';
import {MAX_TYPE_LENGTH, TYPE_NAME_RE} from '../task/validate.js';

/** One configured cell (AX_CELLS entry): the types it takes and its own servers, when it has them. */
export interface CellSpec {
  /** Exact type names (`order_notify`) or prefixes ending in `_*` (`order_*`, `report_daily_*`). */
  types: string[];
  /** Its own MySQL database (or server); absent: AX_MYSQL_URL. */
  mysqlUrl?: string;
  /** Its own RabbitMQ server or vhost (or a cluster's nodes, comma-separated); absent: AX_AMQP_URL. */
  amqpUrl?: string;
}

/** The `cells` setting: cell name → spec. Empty: one cell, the default. */
export type CellsSetting = Record<string, CellSpec>;

export const CELL_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** `domain_*` or `domain_word_*`: a type prefix (whole words, then `_*`). */
const PREFIX_RE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\*$/;

/**
 * Validates the raw `cells` setting (a JSON text from the environment, or an object from the
 * config file). Throws invalid_input naming `from` for: JSON that does not parse, a bad cell name,
 * unknown keys, a pattern that is neither a type name nor a `domain_*` prefix, URLs of the wrong
 * scheme. Cross-cell checks (a type in two cells) are cellMap's.
 */
export function parseCells(raw: unknown, from: string): CellsSetting {
  let data = raw;
  if (typeof raw === 'string') {
    if (raw.trim() === '') return {};
    try {
      data = JSON.parse(raw);
    } catch (e) {
      throw invalid(`cells (${from}) is not valid JSON: ${(e as Error).message}`);
    }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw invalid(`cells (${from}) must be a JSON object: {"<cell>": {"types": ["order_*", ...], "mysqlUrl"?: ..., "amqpUrl"?: ...}}`);
  const out: CellsSetting = {};
  for (const [name, v] of Object.entries(data as Record<string, unknown>)) {
    const where = `cells (${from}): cell "${name}"`;
    if (!CELL_NAME_RE.test(name)) throw invalid(`${where}: a cell name is 1-32 characters of a-z, 0-9, _ and -`);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(`${where} must be an object with "types"`);
    const spec = v as Record<string, unknown>;
    for (const k of Object.keys(spec))
      if (k !== 'types' && k !== 'mysqlUrl' && k !== 'amqpUrl') throw invalid(`${where}: unknown key "${k}" (types, mysqlUrl, amqpUrl)`);
    if (!Array.isArray(spec.types)) throw invalid(`${where}: "types" must be a list of type names or domain_* prefixes`);
    const types: string[] = [];
    for (const t of spec.types as unknown[]) {
      if (typeof t !== 'string' || t.length > MAX_TYPE_LENGTH || !(TYPE_NAME_RE.test(t) || PREFIX_RE.test(t)))
        throw invalid(
          `${where}: ${JSON.stringify(t)} is neither a task type (domain_action) nor a prefix of whole words ending in _* (order_*)`,
        );
      types.push(t);
    }
    const cell: CellSpec = {types};
    if (spec.mysqlUrl !== undefined) {
      if (typeof spec.mysqlUrl !== 'string') throw invalid(`${where}: mysqlUrl must be a string`);
      try {
        parseMysqlUrl(spec.mysqlUrl);
      } catch (e) {
        throw invalid(`${where}: ${(e as Error).message}`);
      }
      cell.mysqlUrl = spec.mysqlUrl;
    }
    if (spec.amqpUrl !== undefined) {
      if (typeof spec.amqpUrl !== 'string')
        throw invalid(`${where}: amqpUrl must be a string (one URL, or a cluster's as a comma-separated list)`);
      parseAmqpUrls(spec.amqpUrl, `${where}: amqpUrl`);
      cell.amqpUrl = spec.amqpUrl;
    }
    out[name] = cell;
  }
  return out;
}

/** A pattern: an exact type, or a prefix (the text before `*`, ending in `_`). */
interface Pattern {
  text: string;
  cell: string;
  prefix: boolean;
  /** The exact name, or the prefix without its `*`. */
  stem: string;
}

const patternOf = (text: string, cell: string): Pattern =>
  text.endsWith('*') ? {text, cell, prefix: true, stem: text.slice(0, -1)} : {text, cell, prefix: false, stem: text};

/** Whether some type matches both patterns. */
function overlaps(a: Pattern, b: Pattern): boolean {
  if (!a.prefix && !b.prefix) return a.stem === b.stem;
  if (a.prefix && b.prefix) return a.stem.startsWith(b.stem) || b.stem.startsWith(a.stem);
  const [p, e] = a.prefix ? [a, b] : [b, a];
  return e.stem.startsWith(p.stem);
}

/** The routing policy: every cell (the default first) and the patterns that send a type to one. */
export interface CellMap {
  /** AX_CELL: takes every type no pattern names. */
  defaultCell: string;
  /** Every cell, the default first, then the configured ones by name. */
  names: string[];
  patterns: ReadonlyArray<Pattern>;
  specs: Readonly<CellsSetting>;
}

/**
 * The routing policy of `cells` with `defaultCell`. Throws invalid_input when a type could belong
 * to two cells (the same pattern, or overlapping ones such as `order_*` and `order_notify`, in two
 * cells), or when the default cell is given servers of its own (it uses AX_MYSQL_URL/AX_AMQP_URL).
 */
export function cellMap(cells: CellsSetting, defaultCell: string): CellMap {
  const patterns: Pattern[] = [];
  for (const [cell, spec] of Object.entries(cells)) {
    if (cell === defaultCell && (spec.mysqlUrl !== undefined || spec.amqpUrl !== undefined))
      throw invalid(`cells: "${cell}" is the default cell (AX_CELL): it uses AX_MYSQL_URL and AX_AMQP_URL, give it no mysqlUrl/amqpUrl`);
    for (const t of new Set(spec.types)) {
      const p = patternOf(t, cell);
      const clash = patterns.find((q) => q.cell !== cell && overlaps(p, q));
      if (clash)
        throw invalid(
          clash.text === p.text
            ? `cells: type "${t}" is mapped to two cells, "${clash.cell}" and "${cell}"`
            : `cells: "${t}" (cell "${cell}") and "${clash.text}" (cell "${clash.cell}") overlap: a type would be mapped to two cells`,
        );
      patterns.push(p);
    }
  }
  const others = Object.keys(cells)
    .filter((c) => c !== defaultCell)
    .sort();
  return {defaultCell, names: [defaultCell, ...others], patterns, specs: cells};
}

/** The cell of a task type: the cell of the pattern that names it, else the default cell. */
export function cellOf(map: CellMap, type: string): string {
  for (const p of map.patterns) if (p.prefix ? type.startsWith(p.stem) : type === p.stem) return p.cell;
  return map.defaultCell;
}

/** Throws invalid_input unless `cell` is configured, listing the cells that are. */
export function knownCell(map: CellMap, cell: string): string {
  if (!map.names.includes(cell))
    throw invalid(`unknown cell "${cell}": the configured cells are ${map.names.join(', ')} (AX_CELL, AX_CELLS)`);
  return cell;
}

/**
 * The cells a `--cell` flag names (`a,b`; blanks and repeats dropped); absent: the default cell.
 * Throws invalid_input for an unknown cell, an empty list, or several cells where `single`.
 */
export function parseCellList(map: CellMap, flag: string | undefined, o: {single?: boolean} = {}): string[] {
  if (flag === undefined) return [map.defaultCell];
  const list = [...new Set(flag.split(',').map((s) => s.trim()))].filter((s) => s !== '');
  if (list.length === 0) throw invalid('--cell needs a cell name');
  if (o.single && list.length > 1) throw invalid(`--cell takes one cell here, got ${list.join(', ')}`);
  for (const c of list) knownCell(map, c);
  return list;
}

/** What a cell connects to: its own URLs, or the defaults. */
export function cellTarget(map: CellMap, cell: string, defaults: {mysqlUrl: string; amqpUrl: string}): {mysqlUrl: string; amqpUrl: string} {
  const spec = map.specs[knownCell(map, cell)];
  return {mysqlUrl: spec?.mysqlUrl ?? defaults.mysqlUrl, amqpUrl: spec?.amqpUrl ?? defaults.amqpUrl};
}

/**
 * Which outbox rows the relay of `served` cells takes, by type (the outbox is the business's,
 * shared by every cell): all of them, only the types of these patterns, or every type except
 * those of these patterns (the default cell's relay: it takes the types no other cell names).
 */
export type TypeSelector = {all: true} | {all: false; negate: boolean; exact: string[]; prefixes: string[]};

export function typeSelector(map: CellMap, served: readonly string[]): TypeSelector {
  if (map.names.every((c) => served.includes(c))) return {all: true};
  const withDefault = served.includes(map.defaultCell);
  // Patterns never overlap across cells, so "named by a served cell's pattern" and "named by no
  // other cell's pattern" are exact complements (the default cell takes the unnamed types).
  const picked = map.patterns.filter((p) => served.includes(p.cell) !== withDefault);
  return {
    all: false,
    negate: withDefault,
    exact: picked.filter((p) => !p.prefix).map((p) => p.stem),
    prefixes: picked.filter((p) => p.prefix).map((p) => p.stem),
  };
}

/**
 * Types with tasks in `cell` that the configuration now routes elsewhere (a type moved to another
 * cell while tasks of it were pending), each with the cell it belongs to now.
 */
export function misplacedTypes(map: CellMap, cell: string, types: Iterable<string>): Array<{type: string; cell: string}> {
  const out: Array<{type: string; cell: string}> = [];
  for (const t of types) {
    const now = cellOf(map, t);
    if (now !== cell) out.push({type: t, cell: now});
  }
  return out;
}

/** The settings a cell's configuration is derived from (a part of AxConfig). */
interface CellConfigBase {
  cell: string;
  mysqlUrl: string;
  amqpUrl: string;
  outboxMysqlUrl: string;
}

/**
 * The configuration a process serving `cell` runs with, from the loaded one (whose `cell` is the
 * default cell, AX_CELL): that cell, its database and RabbitMQ (its own, or the defaults). The
 * outbox stays where it was (it is the business's, not a cell's): an empty AX_OUTBOX_MYSQL_URL is
 * resolved to AX_MYSQL_URL first. Keep `map` (built from the loaded configuration) for routing:
 * the result's `cell` is no longer the default. Throws invalid_input for an unknown cell.
 */
export function cellConfig<C extends CellConfigBase>(cfg: C, map: CellMap, cell: string): C {
  return {...cfg, ...cellTarget(map, cell, cfg), cell, outboxMysqlUrl: cfg.outboxMysqlUrl || cfg.mysqlUrl};
}

/**
 * Checks that every type belongs to `cell` (a command given `--cell` with tasks or schedules of
 * types routed elsewhere). Throws invalid_input naming the first type that does not, and its cell.
 */
export function requireCellOfTypes(map: CellMap, cell: string, types: Iterable<string>): void {
  for (const t of types) {
    const own = cellOf(map, t);
    if (own !== cell)
      throw invalid(`task type "${t}" belongs to cell "${own}" (AX_CELLS), not "${cell}": drop --cell, or use --cell ${own}`);
  }
}
