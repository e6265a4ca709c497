import {describe, expect, it} from 'vitest';
import {listAudit, MAX_OPERATOR_LENGTH, operatorName} from '../../src/core/audit/audit.js';
import {isAxError} from '../../src/core/errors.js';

describe('operatorName', () => {
  const os = {user: 'deploy', host: 'ops-1'};
  it('is AX_OPERATOR, trimmed, when set', () => {
    expect(operatorName({...os, env: '  alice@example.com '})).toBe('alice@example.com');
  });
  it('is user@host when AX_OPERATOR is unset or blank', () => {
    expect(operatorName({...os, env: undefined})).toBe('deploy@ops-1');
    expect(operatorName({...os, env: '   '})).toBe('deploy@ops-1');
  });
  it('refuses control characters and over-long names with invalid_input', () => {
    for (const env of ['ali\u001b[31mce', 'a\nb', 'x'.repeat(MAX_OPERATOR_LENGTH + 1)]) {
      let err: unknown;
      try {
        operatorName({...os, env});
      } catch (e) {
        err = e;
      }
      expect(isAxError(err, 'invalid_input'), JSON.stringify(env)).toBe(true);
    }
    expect(operatorName({...os, env: 'x'.repeat(MAX_OPERATOR_LENGTH)})).toHaveLength(MAX_OPERATOR_LENGTH);
  });
});

describe('listAudit', () => {
  const store = {auditList: async () => []};
  it('passes a good page through to the store', async () => {
    const seen: unknown[] = [];
    await listAudit({auditList: async (p) => (seen.push(p), [])}, {limit: 5, after: 9});
    expect(seen).toEqual([{limit: 5, after: 9}]);
  });
  it.each([
    [{limit: 0}, /limit must be/],
    [{limit: 1001}, /limit must be/],
    [{limit: 1.5}, /limit must be/],
    [{limit: 5, after: 0}, /after must be/],
    [{limit: 5, after: Number.NaN}, /after must be/],
  ])('refuses %o', async (p, message) => {
    await expect(listAudit(store, p)).rejects.toThrow(message);
  });
});
