import type {AxStore, ListFilter} from '../../src/core/store/types.js';

/** The ids of every page of `f` (f.limit a page), each page's last task the next one's keyset cursor, in order. */
export async function idsOfAllPages(store: AxStore, f: ListFilter): Promise<string[]> {
  const got: string[] = [];
  let after: ListFilter['after'];
  for (;;) {
    const page = await store.tasksList({...f, ...(after ? {after} : {})});
    got.push(...page.map((t) => t.id));
    const last = page.at(-1);
    if (page.length < f.limit || !last) return got;
    after = {createdAt: last.createdAt, id: last.id};
  }
}
