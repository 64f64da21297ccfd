import { randomBytes } from 'node:crypto';
import { useCursorKeys } from 'src/common/pagination/cursor';
import { decodeReceiptCursor, encodeReceiptCursor, encodeV1ReceiptCursor } from 'src/modules/receipts/receipt-cursor';

// Installed before the table below is built (it issues cursors at definition time).
useCursorKeys([randomBytes(32)]);

describe('receipt cursors', () => {
  const at = new Date('2026-03-04T05:06:07.089Z');

  it('issues v2 cursors that carry the full timestamp and receipt id and read back', () => {
    const cursor = encodeReceiptCursor('ws_1', at, 'rcp_abc');
    expect(cursor).toMatch(/^v2\.[A-Za-z0-9_-]+$/);
    expect(decodeReceiptCursor('ws_1', cursor)).toEqual({ kind: 'keyset', at, id: 'rcp_abc' });
  });

  it('refuses a v2 cursor issued for another workspace', () => {
    expect(decodeReceiptCursor('ws_2', encodeReceiptCursor('ws_1', at, 'rcp_abc'))).toBeNull();
  });

  it('still reads v1 cursors', () => {
    const cursor = encodeV1ReceiptCursor(at, 'rcp_old');
    expect(cursor).toBe(`v1.${Buffer.from('2026-03-04T05:06:07.089Z|rcp_old').toString('base64url')}`);
    expect(decodeReceiptCursor('ws_1', cursor)).toEqual({ kind: 'keyset', at, id: 'rcp_old' });
  });

  it('reads anything without a version prefix as a legacy RFC 3339 time cursor', () => {
    expect(decodeReceiptCursor('ws_1', '2026-03-04T05:06:07Z')).toEqual({ kind: 'time', before: new Date('2026-03-04T05:06:07Z') });
    expect(decodeReceiptCursor('ws_1', '2026-03-04T07:06:07+02:00')).toEqual({ kind: 'time', before: new Date('2026-03-04T05:06:07Z') });
  });

  it.each([
    ['empty v2', 'v2.'],
    ['v2 garbage', 'v2.bm90LWpzb24'],
    ['v2 with padding', `${encodeReceiptCursor('ws_1', at, 'rcp_abc')}=`],
    ['v2 edited', `v2.${Buffer.from(JSON.stringify({ v: 2, at: at.toISOString(), id: 'rcp_x', c: '0'.repeat(32) })).toString('base64url')}`],
    ['v1 without separator', `v1.${Buffer.from('2026-03-04T05:06:07.089Z').toString('base64url')}`],
    ['v1 without id', `v1.${Buffer.from('2026-03-04T05:06:07.089Z|').toString('base64url')}`],
    ['v1 impossible date', `v1.${Buffer.from('2026-02-30T05:06:07.089Z|rcp_a').toString('base64url')}`],
    ['v1 second precision', `v1.${Buffer.from('2026-03-04T05:06:07Z|rcp_a').toString('base64url')}`],
    ['v1 bad alphabet', 'v1.abc+/'],
    ['v3', `v3.${encodeReceiptCursor('ws_1', at, 'rcp_abc').slice(3)}`],
    ['words', 'yesterday'],
    ['date only', '2026-03-04'],
    ['impossible time', '2026-03-04T25:00:00Z'],
  ])('rejects %s', (_name, text) => {
    expect(decodeReceiptCursor('ws_1', text)).toBeNull();
  });
});
